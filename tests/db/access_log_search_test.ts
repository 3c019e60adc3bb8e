/**
 * The attack log's store queries: the class filter in SQL agrees with `recordClass` for records
 * of every kind (stored compact or whole), actions combine with rate-limited blocks, and the
 * free-text search matches the path, the query (as sent or decoded), the client address, the
 * user agent and the host, case-insensitively, reading a bounded number of rows a page.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { record } from "../_helpers/records.ts";
import { testStore } from "../_helpers/store.ts";
import { createAccessLogRepo } from "../../db/access_log_repo.ts";
import { createAccessLogQueryRepo } from "../../db/access_log_queries.ts";
import { lineFormat } from "../../mod/access_log/lines.ts";
import { type AccessRecord, recordLines, toRow } from "../../mod/access_log/record.ts";
import { RECORD_CLASSES, recordClass } from "../../mod/access_log/record_class.ts";

const finding = (cls: string, rule = `${cls}.rule`) => ({
  class: cls,
  confidence: "high",
  score: 80,
  location: "query:q",
  evidence: "zz-evidence-only",
  rule,
});
const entry = (check: string, result: string, rule?: string) =>
  rule === undefined ? { check, result, us: 1 } : { check, result, us: 1, rule };
const SITE = entry("site", "match");

/** A record of each kind the data plane writes. */
function kinds(): AccessRecord[] {
  return [
    record({}),
    record({ finding: finding("xss"), chain: [SITE, entry("engine", "pass")] }),
    record({ action: "log", finding: finding("sqli"), chain: [SITE, entry("engine", "log")] }),
    record({
      action: "block",
      status: 403,
      finding: finding("sqli"),
      chain: [SITE, entry("engine", "block", "sqli.union")],
    }),
    record({ action: "block", status: 403, chain: [SITE, entry("engine", "block")] }),
    record({ action: "block", status: 403, chain: [SITE, entry("ip_list", "block", "e1")] }),
    record({ action: "block", status: 403, chain: [SITE, entry("acl", "block", "a1")] }),
    record({ action: "challenge", chain: [SITE, entry("bot", "challenge:all", "b1")] }),
    record({ action: "block", status: 429, chain: [SITE, entry("rate_limit", "limited")] }),
    record({
      action: "block",
      status: 429,
      chain: [SITE, entry("api_rate_limit", "limited", "login")],
    }),
    // A logged schema finding before a custom rule blocked: the rule decided.
    record({
      action: "block",
      status: 403,
      finding: finding("api_schema"),
      chain: [SITE, entry("api_schema", "log", "s1"), entry("custom_rule", "block", "r1")],
    }),
    record({ action: "block", status: 400, chain: [] }),
  ];
}

Deno.test("the class filter in SQL finds exactly the records recordClass() names, stored compact or whole", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const records = [...kinds(), ...kinds()];
  // The first half as the data plane writes them (compact), the rest whole (older rows).
  repo.insertLines(records.slice(0, records.length / 2).map(recordLines).join(""));
  repo.insertBatch(records.slice(records.length / 2).map(toRow));
  const seen = new Set(records.map(recordClass));
  assertEquals(seen.has(null), true, "a passed request without a finding has no class");
  assertEquals([...seen].filter((c) => c !== null).sort(), [
    "acl",
    "api_rate_limit",
    "bot",
    "custom_rule",
    "engine",
    "ip_list",
    "other",
    "rate_limit",
    "sqli",
    "xss",
  ]);
  for (const cls of RECORD_CLASSES) {
    const want = records.filter((r) => recordClass(r) === cls).map((r) => r.trace_id).sort();
    const got = repo.list({ attackClass: cls, limit: 100 }).map((r) => r.trace_id).sort();
    assertEquals(got, want, cls);
  }
});

Deno.test("actions combine, and rate_limited is a block answered 429", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  repo.insertLines(kinds().map(recordLines).join(""));
  const count = (f: { actions?: string[]; rateLimited?: boolean }) =>
    repo.list({ ...f, limit: 100 }).length;
  assertEquals(count({}), 12);
  assertEquals(count({ actions: ["block", "challenge"] }), 9);
  assertEquals(count({ actions: ["pass"] }), 2);
  assertEquals(count({ rateLimited: true }), 2);
  assertEquals(count({ actions: ["log"], rateLimited: true }), 3);
});

Deno.test("free text matches path, query as sent or decoded, client, user agent and host, in any case", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const rows = [
    record({ path: "/Admin/login.php" }),
    record({ query: "q=1%20UNION%20select%20password" }),
    record({ query: "name=%3Cscript%3Ealert(1)%3C/script%3E" }),
    record({ query: "a=b+c" }),
    record({ client_ip: "203.0.113.77" }),
    record({ user_agent: "sqlmap/1.7 (https://sqlmap.org)" }),
    record({ host: "api.shop.test" }),
    record({ query: 'x="quoted"' }),
    record({ finding: finding("xss") }),
    record({ user_agent: "Spider-测试/2.0", path: "/a_b" }),
  ];
  repo.insertLines(rows.slice(0, 5).map(recordLines).join(""));
  repo.insertBatch(rows.slice(5).map(toRow));
  const found = (search: string) =>
    repo.page({ search, limit: 100 }).rows.map((r) =>
      rows.findIndex((x) => x.trace_id === r.trace_id)
    )
      .sort();
  assertEquals(found("admin/LOGIN"), [0]);
  assertEquals(found("union select"), [1], "decoded");
  assertEquals(found("1%20union"), [1], "as sent");
  assertEquals(found("<script>alert(1)"), [2]);
  assertEquals(found("b c"), [3], "a plus is a space in a query");
  assertEquals(found("203.0.113.77"), [4]);
  assertEquals(found("SQLMAP"), [5]);
  assertEquals(found("api.shop"), [6]);
  assertEquals(found('"quoted"'), [7]);
  assertEquals(found("测试"), [9], "a term LIKE cannot compare is still found");
  assertEquals(found("a_b"), [9], "LIKE's wildcards are literal");
  assertEquals(found("%3cSCRIPT%3e"), [2]);
  // Only those fields: evidence, the chain and the site's name are not searched.
  assertEquals(found("zz-evidence-only"), []);
  assertEquals(found("match"), []);
  assertEquals(repo.page({ search: "shop", limit: 100 }).rows.length, 10, "every host");
});

Deno.test("a search reads a bounded number of rows a page and goes on below with the cursor", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const small = createAccessLogQueryRepo(store.db, lineFormat, { searchScan: 4 });
  const rows = Array.from({ length: 10 }, (_, i) => record({ path: i === 1 ? "/needle" : "/hay" }));
  repo.insertLines(rows.map(recordLines).join(""));
  const ids = repo.list({ limit: 100 }).map((r) => r.id);
  const top = ids[0]!;
  // Ten rows, newest first: the needle is the ninth. Pages of four rows read: none, none, found.
  const first = small.page({ search: "needle", limit: 50 });
  assertEquals([first.rows.length, first.searchedTo], [0, top + 1 - 4]);
  const second = small.page({ search: "needle", limit: 50, beforeId: first.searchedTo! });
  assertEquals([second.rows.length, second.searchedTo], [0, top + 1 - 8]);
  const third = small.page({ search: "needle", limit: 50, beforeId: second.searchedTo! });
  assertEquals(third.rows.map((r) => r.path), ["/needle"]);
  assertEquals(third.searchedTo, null, "the oldest row was read");
  // Without a search, nothing is bounded.
  assertEquals(small.page({ limit: 50 }).rows.length, 10);
});
