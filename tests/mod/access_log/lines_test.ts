/**
 * The compact access-log record (mod/access_log/lines.ts) against the serialisation it replaced:
 * for records as the data plane makes them (`ArrivingRecord`, masked copies), every read of the
 * store must give back exactly the text `JSON.stringify(stored record)` gave (toRow's `record`),
 * whatever the fields hold.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { testStore } from "../../_helpers/store.ts";
import { createAccessLogRepo } from "../../../db/access_log_repo.ts";
import { lineFormat, parseRowLines, rowLines } from "../../../mod/access_log/lines.ts";
import {
  type AccessRecord,
  type Action,
  arrivingRecord,
  recordLines,
  toRow,
} from "../../../mod/access_log/record.ts";

/** A small seeded generator (mulberry32): a failure names its seed and repeats. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  "a",
  "/shop/item",
  "é",
  "中文",
  "😀",
  '"',
  "\\",
  "\n",
  "\r\n",
  "\t",
  "\u2028",
  "\u0000",
  "\ud800",
  "\udfff",
  "'",
  "<script>",
  "%00",
  "token=x",
  " ",
  "\u007f",
  "\u00ff",
];

function generator(seed: number) {
  const r = rng(seed);
  const int = (n: number) => Math.floor(r() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const text = (max = 12): string => {
    if (r() < 0.05) return "/" + "x".repeat(2000 + int(9000)); // a very long value
    let s = "";
    for (let i = int(max); i > 0; i--) s += pick(PIECES);
    return s;
  };
  const maybe = <T>(v: () => T): T | null => (r() < 0.3 ? null : v());
  let n = 0;
  return (): AccessRecord => {
    n++;
    const rec = arrivingRecord({
      trace_id: (seed * 100_000 + n).toString(16).padStart(32, "0"),
      time: Date.UTC(2026, 0, 1) + int(1e9) + (r() < 0.1 ? 0.5 : 0),
      peer_ip: pick(["192.0.2.1", "2001:db8::1", text()]),
      proto: pick(["http", "https"] as const),
      method: pick(["GET", "POST", "PATCH", text(3)]),
      host: pick(["shop.test", "shop.test:8443", text(4)]),
      path: pick(["/", "/a/b", text()]),
      query: pick(["", "q=1", "token=secret&x=1", text()]),
      user_agent: maybe(() => text()),
    });
    rec.site_id = maybe(() => pick(["s1", text(3)]));
    rec.site = maybe(() => text(4));
    if (r() < 0.3) rec.client_ip = pick(["198.51.100.7", text(3)]);
    rec.status = pick([0, 200, 302, 400, 403, 429, 502, 504]);
    rec.action = pick<Action>(["pass", "block", "log", "challenge"]);
    for (let i = int(6); i > 0; i--) {
      const check = pick([
        "site",
        "ip_list",
        "rate_limit",
        "apisec",
        "engine",
        "upstream",
        text(2),
      ]);
      const result = pick(["pass", "block", "limited", "timeout", "unreachable", text(2)]);
      const us = pick([0, int(5000), -0, 1.5]);
      if (r() < 0.5) rec.chain.push({ check, result, us });
      else rec.chain.push({ check, result, us, rule: pick(["xss.tag", "ECONNREFUSED", text(3)]) });
    }
    if (r() < 0.4) {
      rec.finding = {
        class: pick(["sqli", "xss", "rce"]),
        confidence: pick(["low", "medium", "high"]),
        score: int(100),
        location: pick(["query:q", "header:authorization", "cookie:sid", "json.user.password"]),
        evidence: text(),
        rule: text(3),
      };
    }
    rec.findings = int(5);
    rec.upstream = maybe(() => pick(["http://127.0.0.1:8080", text(3)]));
    rec.bytes_in = maybe(() => int(1e6));
    rec.bytes_out = maybe(() => int(1e6));
    rec.latency_us.total = int(1e5);
    rec.latency_us.waf = int(1e4);
    rec.latency_us.upstream = maybe(() => int(1e5));
    if (r() < 0.2) rec.inspection = "budget";
    return rec;
  };
}

Deno.test("every read of a compact record gives back the text the whole record was stored as (randomised records)", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const seed = 1126;
  const next = generator(seed);
  const records = Array.from({ length: 400 }, next);
  const lines = records.map(recordLines).join("");
  assertEquals(repo.insertLines(lines), records.length);
  const expected = records.map((r) => toRow(r).record);
  const byTrace = (rows: { trace_id: string; record: string }[]) =>
    new Map(rows.map((r) => [r.trace_id, r.record]));
  const listed = byTrace(repo.list({ limit: 1000 }));
  const after = byTrace(repo.readAfter(0, 1000).rows);
  const parsed = byTrace(parseRowLines(lines));
  const rowed = byTrace(parseRowLines(records.map((r) => rowLines(toRow(r))).join("")));
  for (const [i, r] of records.entries()) {
    const want = expected[i];
    const where = `seed ${seed}, record ${i}`;
    assertEquals(repo.get(r.trace_id)?.record, want, `get, ${where}`);
    assertEquals(listed.get(r.trace_id), want, `list, ${where}`);
    assertEquals(after.get(r.trace_id), want, `readAfter, ${where}`);
    assertEquals(parsed.get(r.trace_id), want, `parseRowLines, ${where}`);
    assertEquals(rowed.get(r.trace_id), want, `rowLines, ${where}`);
  }
});

Deno.test("a refused request's target with a NUL byte is kept whole in its record", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const rec = arrivingRecord({
    trace_id: "f".repeat(32),
    time: Date.UTC(2026, 0, 1),
    peer_ip: "192.0.2.1",
    proto: "http",
    method: "G\u0000ET",
    host: "shop.test\u0000.evil",
    path: "/a\u0000/../../etc/passwd",
    query: "",
    user_agent: null,
  });
  rec.status = 400;
  rec.action = "block";
  rec.chain.push({ check: "framing", result: "invalid request line", us: 0 });
  repo.insertLines(recordLines(rec));
  const got = JSON.parse(repo.get(rec.trace_id)!.record);
  assertEquals([got.method, got.host, got.path], [rec.method, rec.host, rec.path]);
});

const FLAGGED_ARRIVAL = {
  time: Date.UTC(2026, 0, 1),
  peer_ip: "192.0.2.1",
  proto: "http",
  host: "shop.test",
  query: "",
  user_agent: null,
} as const;

Deno.test("a record whose inspection ran out of budget keeps its flag in every read", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const rec = arrivingRecord({
    ...FLAGGED_ARRIVAL,
    trace_id: "e".repeat(32),
    method: "POST",
    path: "/comment",
  });
  rec.status = 200;
  rec.inspection = "budget";
  repo.insertLines(recordLines(rec));
  const stored = repo.get(rec.trace_id)!.record;
  assertEquals(JSON.parse(stored).inspection, "budget");
  assertEquals(stored, toRow(rec).record);
  const plain = arrivingRecord({ ...rec, trace_id: "d".repeat(32) });
  repo.insertLines(recordLines(plain));
  assertEquals("inspection" in JSON.parse(repo.get(plain.trace_id)!.record), false);
});
