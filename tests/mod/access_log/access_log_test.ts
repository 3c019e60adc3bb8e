import { assertEquals, ok } from "../../_helpers/assert.ts";
import { waitFor } from "../../_helpers/wait.ts";
import { record } from "../../_helpers/records.ts";
import { testStore } from "../../_helpers/store.ts";
import { createAccessLogRepo } from "../../../db/access_log_repo.ts";
import type { AccessLogRow } from "../../../db/access_log_rows.ts";
import { createWorkerWriter } from "../../../mod/access_log/worker_writer.ts";
import { directWriter } from "../../../mod/access_log/writer.ts";
import { lineFormat, parseRowLines, rowLines } from "../../../mod/access_log/lines.ts";
import { createAccessLog } from "../../../mod/access_log/access_log.ts";
import type { AccessLogSink } from "../../../mod/access_log/sinks.ts";
import {
  Chain,
  recordLines,
  safeEvidence,
  safeQuery,
  toRow,
} from "../../../mod/access_log/record.ts";
import type { AccessRecord } from "../../../mod/access_log/record.ts";
import type { RowBatch } from "../../../mod/access_log/write_queue.ts";
import type { AccessLogWriter } from "../../../mod/access_log/writer.ts";
import { Admission } from "../../../mod/access_log/admission.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";

const DAY = 86_400_000;

/** A worker's batch of passed rows only (as `app/data_worker_records.ts` sends them). */
function passedRows(records: readonly AccessRecord[]): RowBatch {
  const sites = new Map<string, number>();
  for (const r of records) sites.set(r.site ?? "", (sites.get(r.site ?? "") ?? 0) + 1);
  return {
    lines: "",
    count: 0,
    passLines: records.map((r) => rowLines(toRow(r))).join(""),
    passCount: records.length,
    passSites: [...sites],
    observed: [],
  };
}

async function setup(
  options: { queueSize?: number; maxRecords?: number; flushIntervalMs?: number } = {},
) {
  const store = await testStore();
  const clock = new FakeClock(Date.UTC(2026, 0, 10));
  const repo = createAccessLogRepo(store.db, lineFormat);
  const logger = createMemoryLogger();
  const shipped: AccessLogRow[][] = [];
  const sink: AccessLogSink = {
    offer: (rows) => shipped.push([...rows]),
    stats: () => ({ test: true }),
    close: () => Promise.resolve(),
  };
  const log = createAccessLog({
    queueSize: options.queueSize ?? 1000,
    batchSize: 3,
    retentionDays: 2,
    maxRecords: options.maxRecords ?? 1000,
    flushIntervalMs: options.flushIntervalMs,
  }, { repo, clock, logger, sinks: [sink] });
  return { store, repo, log, clock, logger, shipped };
}

Deno.test("records wait in the queue until a flush writes them in batches", async () => {
  const { store, repo, log, shipped } = await setup();
  await using _ = store;
  for (let i = 0; i < 7; i++) ok(log.push(record()));
  assertEquals(repo.count(), 0);
  assertEquals(log.stats().queued, 7);
  assertEquals(await log.flush(), 7);
  assertEquals(repo.count(), 7);
  assertEquals(shipped.map((b) => b.length), [3, 3, 1]);
  assertEquals(log.stats().written, 7);
  assertEquals(log.stats().queued, 0);
});

/**
 * The early-flush tests' periodic flush: never within the test, so only the early flush hands
 * records over. With the default 100 ms, a loaded machine let the timer's flush run between the
 * early flush and the test's next turn, and it offered the sinks the partial batch (seen: the
 * shipped batches ended in a 1).
 */
const NO_TIMER = { flushIntervalMs: 3_600_000 };

Deno.test("a running log flushes early once 64 records are queued, keeping whole sink batches", async () => {
  const { store, repo, log, shipped } = await setup(NO_TIMER);
  await using _ = store;
  log.start();
  try {
    // The 64th record schedules the hand-over right after this turn of the event loop (not a
    // millisecond timer), and what the turn pushes after it goes along in the same batch.
    for (let i = 0; i < 70; i++) log.push(record());
    assertEquals(repo.count(), 0);
    await new Promise((r) => setImmediate(r));
    assertEquals(repo.count(), 70);
    assertEquals(shipped.map((b) => b.length), Array(23).fill(3));
    await log.flush();
    assertEquals(shipped.flat().length, 70);
  } finally {
    await log.stop();
  }
});

Deno.test("a running log below 64 queued records waits for its timer", async () => {
  const { store, repo, log } = await setup(NO_TIMER);
  await using _ = store;
  log.start();
  try {
    for (let i = 0; i < 63; i++) log.push(record());
    await new Promise((r) => setImmediate(r));
    assertEquals(repo.count(), 0);
    assertEquals(await log.flush(), 63);
  } finally {
    await log.stop();
  }
});

Deno.test("past the high-water mark passed records are sampled and counted per site, verdicts still taken", async () => {
  const { store, repo, log, logger } = await setup({ queueSize: 100 });
  await using _ = store;
  // Up to half the queue everything is taken.
  for (let i = 0; i < 50; i++) ok(log.push(record()));
  // Between the mark and the queue's size, one passed record in N, N growing with the backlog
  // (2 just past the mark); the first one past the mark is taken, the next one not.
  const taken = Array.from({ length: 32 }, () => log.push(record({ site: "blog" })));
  const kept = taken.filter(Boolean).length;
  assertEquals([taken[0], taken[1]], [true, false]);
  ok(kept >= 32 / 16 && kept <= 32 / 2, `between 1 in 16 and 1 in 2 kept (${kept})`);
  const blocked = record({ action: "block", status: 403 });
  ok(log.push(blocked), "a verdict is taken past the mark");
  assertEquals(log.stats().sampled, 32 - kept);
  assertEquals(log.stats().sampled_sites, { blog: 32 - kept });
  ok(log.stats().sample_every > 1, `sampling now (${log.stats().sample_every})`);
  assertEquals(log.stats().dropped, 0);
  assertEquals(await log.flush(), 51 + kept);
  assertEquals(repo.count(), 51 + kept);
  assertEquals(log.stats().sample_every, 1);
  ok(logger.lines.some((l) => l.includes(`sampled_total=${32 - kept}`)), "the sampling is logged");
});

Deno.test("Admission: the 1-in-N sampling doubles from 2 to 256 between the high-water mark and the queue's size", () => {
  const a = new Admission(1000);
  assertEquals(a.highWater, 500);
  assertEquals(
    [0, 500, 501, 562, 563, 625, 750, 937, 999, 1000, 1001, 4000].map((h) => a.sampleEvery(h)),
    [1, 1, 2, 2, 4, 8, 32, 128, 256, 256, 0, 0],
  );
  // Deterministic: 1 in 8 at a steady backlog, the first of each 8.
  const kept = Array.from({ length: 32 }, () => a.passed(680, 1));
  assertEquals(kept.filter(Boolean).length, 4);
  assertEquals(kept.indexOf(true), 0);
  ok(a.verdict(3999, 1) && !a.verdict(4000, 1), "verdicts are held up to four times the queue");
});

Deno.test("every write keeps the newest max_records rows; retention deletes by age", async () => {
  const { store, repo, log, clock } = await setup({ maxRecords: 3 });
  await using _ = store;
  const now = clock.now();
  log.push(record({ time: now - 3 * DAY }));
  for (let i = 0; i < 5; i++) log.push(record({ time: now - i * 1000 }));
  assertEquals(await log.flush(), 6);
  assertEquals(repo.count(), 3);
  assertEquals(log.stats().pruned, 3);
  const left = repo.list({ limit: 10 }).map((r) => r.time);
  assertEquals(left, [now - 4000, now - 3000, now - 2000]);
  assertEquals(await log.prune(), 0);

  const aged = await setup({ maxRecords: 1000 });
  await using __ = aged.store;
  aged.log.push(record({ time: now - 3 * DAY }));
  aged.log.push(record({ time: now - 1000 }));
  await aged.log.flush();
  assertEquals(await aged.log.prune(), 1);
  assertEquals(aged.repo.list({ limit: 10 }).map((r) => r.time), [now - 1000]);
});

Deno.test("list() and get() see a record pushed a moment ago", async () => {
  const { store, log } = await setup();
  await using _ = store;
  const r = record({ action: "block", status: 403 });
  log.push(r);
  assertEquals((await log.get(r.trace_id))?.action, "block");
  assertEquals((await log.list({ action: "block", limit: 5 })).length, 1);
});

Deno.test("the repository filters by every column and pages by cursor", async () => {
  const { store, repo, log } = await setup();
  await using _ = store;
  log.push(record({ client_ip: "198.51.100.7", status: 403, action: "block" }));
  log.push(record({ site_id: "s2", status: 404 }));
  log.push(record({
    finding: {
      class: "xss",
      confidence: "high",
      score: 80,
      location: "query:q",
      evidence: "<script>",
      rule: "xss.tag",
    },
    action: "log",
  }));
  await log.flush();
  assertEquals(repo.list({ clientIp: "198.51.100.7", limit: 10 }).length, 1);
  assertEquals(repo.list({ siteId: "s2", limit: 10 }).length, 1);
  assertEquals(repo.list({ status: 404, limit: 10 }).length, 1);
  assertEquals(repo.list({ attackClass: "xss", limit: 10 })[0]?.action, "log");
  const first = repo.list({ limit: 2 });
  const rest = repo.list({ limit: 2, beforeId: first[1]!.id });
  assertEquals(rest.length, 1);
});

Deno.test("stored records mask credential evidence and secret query values", () => {
  assertEquals(safeEvidence("header:authorization", "Bearer abc"), "[masked: 10 characters]");
  assertEquals(safeEvidence("cookie:session", "x' or 1=1"), "[masked: 9 characters]");
  assertEquals(safeEvidence("query:q", "x' or 1=1"), "x' or 1=1");
  assertEquals(safeEvidence("query:q", "a".repeat(500)).length, 201);
  assertEquals(
    safeQuery("q=1&api_key=s3cret&token=t&x=2"),
    "q=1&api_key=[masked]&token=[masked]&x=2",
  );
  const row = toRow(record({
    query: "password=hunter2",
    finding: {
      class: "sqli",
      confidence: "high",
      score: 90,
      location: "header:cookie",
      evidence: "session=abc' or 1=1",
      rule: "sqli.tautology",
    },
  }));
  ok(!row.record.includes("hunter2"));
  ok(!row.record.includes("session=abc"));
  assertEquals(row.attack_class, "sqli");
});

Deno.test("Chain.add() appends checks in order with their timings", () => {
  const entries: { check: string; result: string; us: number; rule?: string }[] = [];
  const chain = new Chain(entries);
  chain.add("site", "match");
  chain.add("engine", "block", "sqli.union");
  assertEquals(entries.map((e) => [e.check, e.result, e.rule]), [
    ["site", "match", undefined],
    ["engine", "block", "sqli.union"],
  ]);
  ok(entries.every((e) => Number.isInteger(e.us) && e.us >= 0));
});

/** An access log on the writer thread over the store at `path`. */
function threaded(repo: ReturnType<typeof createAccessLogRepo>, path: string, maxRecords: number) {
  return createAccessLog({
    queueSize: 30_000,
    batchSize: 500,
    retentionDays: 2,
    maxRecords,
  }, {
    repo,
    clock: new FakeClock(Date.UTC(2026, 0, 10)),
    logger: createMemoryLogger(),
    writer: createWorkerWriter(path),
  });
}

Deno.test("a lowered max_records: the writer thread shrinks the backlog as rows arrive, retention deletes the rest in slices", async () => {
  await using store = await testStore();
  const path = `${store.dir}/waf.db`;
  const repo = createAccessLogRepo(store.db, lineFormat);
  const now = Date.UTC(2026, 0, 10);
  // A backlog written under a higher limit: 6,000 rows past the age limit, 6,000 recent ones.
  const before = threaded(repo, path, 100_000);
  for (let i = 0; i < 6000; i++) before.push(record({ time: now - 3 * DAY }));
  for (let i = 0; i < 6000; i++) before.push(record({ time: now - 6000 + i }));
  assertEquals(await before.flush(), 12_000);
  await before.stop();
  assertEquals(repo.count(), 12_000);

  const log = threaded(repo, path, 1000);
  try {
    // Each write deletes up to twice its rows: 500 in, 1,000 of the oldest out.
    for (let i = 0; i < 500; i++) log.push(record({ time: now }));
    assertEquals(await log.flush(), 500);
    assertEquals(repo.count(), 11_500);
    assertEquals(log.stats().pruned, 1000);
    // Retention deletes the rest, more than one 5,000-row slice, keeping the newest 1,000.
    assertEquals(await log.prune(), 10_500);
    assertEquals(repo.count(), 1000);
    const kept = repo.list({ limit: 1000 }).map((r) => r.time);
    assertEquals(kept.slice(0, 500), Array(500).fill(now));
    assertEquals(kept.at(-1), now - 500);
    assertEquals(log.stats().pruned, 11_500);
  } finally {
    await log.stop();
  }
});

Deno.test("under sustained writes the table never holds more than max_records, and a trace id just written is found", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const log = threaded(repo, `${store.dir}/waf.db`, 1000);
  log.start();
  try {
    let most = 0;
    const now = Date.UTC(2026, 0, 10);
    let last = record({ time: now });
    for (let burst = 0; burst < 80; burst++) {
      // Bursts of 64 as the data plane pushes them (early, deferred flushes).
      for (let i = 0; i < 64; i++) log.push(last = record({ time: now }));
      await new Promise((r) => setTimeout(r, burst % 8 === 0 ? 20 : 0));
      most = Math.max(most, repo.count());
    }
    assertEquals((await log.get(last.trace_id))?.trace_id, last.trace_id);
    most = Math.max(most, repo.count());
    ok(most <= 1000, `the table held ${most} rows`);
    assertEquals(repo.count(), 1000);
    assertEquals(log.stats().written, 80 * 64);
    assertEquals(log.stats().pruned, 80 * 64 - 1000);
    // The rows kept are the newest: retention has nothing left to delete by count.
    assertEquals(repo.list({ limit: 1 })[0]!.trace_id, last.trace_id);
    assertEquals(await log.prune(), 0);
  } finally {
    await log.stop();
  }
});

Deno.test("the writer thread holds the timer's batches briefly; a lookup still finds the newest record", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const log = createAccessLog({
    queueSize: 10_000,
    batchSize: 500,
    retentionDays: 2,
    maxRecords: 100_000,
  }, {
    repo,
    clock: new FakeClock(Date.UTC(2026, 0, 10)),
    logger: createMemoryLogger(),
    writer: createWorkerWriter(`${store.dir}/waf.db`),
  });
  log.start();
  try {
    // Early flushes of 64, deferred by the writer thread: written within its wait, untouched.
    for (let burst = 0; burst < 3; burst++) {
      for (let i = 0; i < 64; i++) log.push(record());
      await new Promise((r) => setTimeout(r, 0));
    }
    // The thread runs at nice 19 and, the first time in this process, type-checks its module:
    // under load that takes seconds, so the wait is long (it ends when the rows are there).
    await waitFor(() => repo.count() >= 192, "the three bursts stored", 60_000);
    assertEquals(repo.count(), 192);
    // A lookup right after a burst finds its last record (it waits for the deferred write).
    let last = record();
    for (let i = 0; i < 64; i++) log.push(last = record());
    await new Promise((r) => setTimeout(r, 0));
    assertEquals((await log.get(last.trace_id))?.trace_id, last.trace_id);
    assertEquals(repo.count(), 256);
  } finally {
    await log.stop();
  }
});

Deno.test("rows a worker sent as text are stored as push stores them; observe sees only the records passed along", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const seen: string[] = [];
  const shipped: number[] = [];
  const log = createAccessLog({
    queueSize: 10,
    batchSize: 500,
    retentionDays: 2,
    maxRecords: 100_000,
  }, {
    repo,
    clock: new FakeClock(Date.UTC(2026, 0, 10)),
    logger: createMemoryLogger(),
    writer: createWorkerWriter(`${store.dir}/waf.db`),
    sinks: [{
      offer: (rows) => shipped.push(rows.length),
      stats: () => ({}),
      close: () => Promise.resolve(),
    }],
    observe: (r) => seen.push(r.trace_id),
  });
  log.start();
  try {
    const tricky = record({
      path: '/a\nb"c',
      host: "h\u2028.test",
      query: "token=secret&x=1",
      action: "block",
    });
    const plain = record();
    ok(log.pushRows({
      ...passedRows([plain]),
      lines: rowLines(toRow(tricky)),
      count: 1,
      observed: [tricky],
    }));
    assertEquals(seen, [tricky.trace_id]);
    // A lookup right after finds the row (the writer thread's wait is cut short).
    const got = await log.get(tricky.trace_id);
    assertEquals({ ...got }, { ...toRow(tricky), id: got!.id });
    assertEquals((await log.get(plain.trace_id))?.record, toRow(plain).record);
    assertEquals(log.stats().written, 2);
    assertEquals(log.stats().queued, 0);
    ok(shipped.length > 0, "the sinks are woken once the rows are stored");
    // Past the queue's size a batch of passed rows is sampled out whole, counted per site.
    const many = Array.from({ length: 11 }, () => record({ site: "shop" }));
    assertEquals(log.pushRows(passedRows(many)), false);
    assertEquals(log.stats().sampled_sites, { shop: 11 });
    assertEquals(log.stats().dropped, 0);
  } finally {
    await log.stop();
  }
  assertEquals(repo.count(), 2);
});

Deno.test("row lines: a batch parses back into the rows it was made of", () => {
  const records = [
    record({ path: "/x\ny", user_agent: "a\r\nb" }),
    record({ site_id: null, site: null }),
    record({
      query: "token=secret&x=1",
      action: "block",
      finding: {
        class: "sqli",
        confidence: "high",
        score: 90,
        location: "cookie:session",
        evidence: "1' or 1=1",
        rule: "sqli.tautology",
      },
    }),
  ];
  const rows = records.map(toRow);
  assertEquals(parseRowLines(rows.map(rowLines).join("")), rows);
  // A record straight to its lines is the same text as through the row.
  assertEquals(records.map(recordLines), rows.map(rowLines));
  assertEquals(parseRowLines(""), []);
});

Deno.test("rows inserted 16 at a time: every row stored in order, a duplicate trace id skipped alone", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const records = Array.from({ length: 40 }, () => record());
  const dup = { ...records[20]!, path: "/duplicate" };
  // 41 rows: two full statements of 16 (the second holds the duplicate), then 9 one by one.
  const text = [...records.slice(0, 25), dup, ...records.slice(25)].map(recordLines).join("");
  assertEquals(repo.insertLines(text), 40);
  const stored = repo.list({ limit: 100 }).reverse();
  assertEquals(stored.map((r) => r.trace_id), records.map((r) => r.trace_id));
  assertEquals(stored.map(({ id: _, ...row }) => row), records.map(toRow));
});

Deno.test("rows the writer has not answered yet count against the queue's size", async () => {
  await using store = await testStore();
  const answers: Array<() => void> = [];
  const log = createAccessLog({
    queueSize: 100,
    batchSize: 500,
    retentionDays: 2,
    maxRecords: 1000,
  }, {
    repo: createAccessLogRepo(store.db, lineFormat),
    clock: new FakeClock(Date.UTC(2026, 0, 10)),
    logger: createMemoryLogger(),
    // A writer that answers only when told to (a slow disk).
    writer: {
      writeLines: (_, o) => new Promise((resolve) => answers.push(() => resolve(o.count))),
      prune: () => Promise.resolve(0),
      trimmed: () => 0,
      close: () => Promise.resolve(),
    },
  });
  for (let i = 0; i < 50; i++) ok(log.push(record()));
  const first = log.flush();
  // The 50 with the writer count as held: past the high-water mark (50) one in 2, then 4, ...
  for (let i = 0; i < 40; i++) log.push(record());
  assertEquals(log.stats(), {
    queued: 62,
    written: 0,
    dropped: 0,
    dropped_verdicts: 0,
    dropped_sites: {},
    sampled: 28,
    sampled_sites: { shop: 28 },
    sample_every: 4,
    spilled: 0,
    spill_rows: 0,
    spill_bytes: 0,
    pruned: 0,
    writer_escalations: 0,
    writer_deescalations: 0,
    sinks: [],
  });
  answers.shift()!();
  assertEquals(await first, 50);
  ok(log.push(record()), "once the writer answered, passed records are taken again");
  const rest = log.flush();
  answers.shift()!();
  assertEquals(await rest, 13);
  assertEquals(log.stats().queued, 0);
});

Deno.test("flushes leave nothing behind: memory does not grow with the number of batches written", async () => {
  // Each flush chains its batch after the previous ones; that chain must not keep a value per
  // batch for ever (it kept a two-element array a flush: ~65 B, 55 MB an hour at 15 k req/s).
  // Measured in a process of its own, whose heap a forced collection makes exact.
  const dir = await Deno.makeTempDir({ prefix: "access-log-chain-" });
  try {
    const script = `${dir}/chain.ts`;
    const log = new URL("../../../mod/access_log/access_log.ts", import.meta.url).href;
    const records = new URL("../../_helpers/records.ts", import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { createAccessLog } from ${JSON.stringify(log)};
import { record } from ${JSON.stringify(records)};
const writer = {
  writeLines: (_lines, o) => Promise.resolve(o.count),
  prune: () => Promise.resolve(0),
  trimmed: () => 0,
  close: () => Promise.resolve(),
};
const logger = { error() {}, warn() {}, info() {}, debug() {} };
const log = createAccessLog(
  { queueSize: 1000, batchSize: 100, retentionDays: 1, maxRecords: 1000 },
  { repo: {}, writer, clock: { now: () => 0 }, logger },
);
const r = record();
async function batches(n) {
  for (let i = 0; i < n; i++) {
    log.push(r);
    if (i % 2 === 0) await log.flush();
    else log.pushRows({ lines: "", count: 1, passLines: "", passCount: 0, passSites: [], observed: [] });
  }
  await log.flush();
}
await batches(10000);
gc(); gc();
const before = Deno.memoryUsage().heapUsed;
await batches(100000);
gc(); gc();
console.log(JSON.stringify({ perBatch: (Deno.memoryUsage().heapUsed - before) / 100000 }));
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-check", "--v8-flags=--expose-gc", script],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assertEquals(out.code, 0);
    const { perBatch } = JSON.parse(new TextDecoder().decode(out.stdout));
    ok(perBatch < 8, `the heap grew ${perBatch.toFixed(1)} B a batch`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a batch the store refuses is dropped, counted and logged; the flushes and lookups after it work", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const logger = createMemoryLogger("json");
  const direct = directWriter(repo);
  // The store refuses the batches written while `full` is set (a full disk).
  let full = false;
  const log = createAccessLog({
    queueSize: 100,
    batchSize: 2,
    retentionDays: 2,
    maxRecords: 1000,
  }, {
    repo,
    clock: new FakeClock(Date.UTC(2026, 0, 10)),
    logger,
    writer: {
      ...direct,
      writeLines: (lines, o) =>
        full && o.count > 0
          ? Promise.reject(new Error("database or disk is full"))
          : direct.writeLines(lines, o),
    },
  });
  const before = [record(), record()];
  for (const r of before) log.push(r);
  assertEquals(await log.flush(), 2);
  full = true;
  const lost = [record(), record(), record()];
  for (const r of lost) log.push(r);
  // Both batches of the flush fail: it resolves with nothing written instead of rejecting.
  assertEquals(await log.flush(), 0);
  ok(log.pushRows(passedRows([record()])));
  assertEquals(log.stats().dropped, 3);
  full = false;
  const after = record();
  log.push(after);
  // A lookup after the failures flushes and finds the newest record.
  assertEquals((await log.get(after.trace_id))?.trace_id, after.trace_id);
  assertEquals(await log.get(lost[0]!.trace_id), undefined);
  const worker = record();
  ok(log.pushRows(passedRows([worker])));
  assertEquals((await log.get(worker.trace_id))?.trace_id, worker.trace_id);
  assertEquals(log.stats(), { ...log.stats(), written: 4, dropped: 4, queued: 0 });
  const failures = logger.lines.map((l) => JSON.parse(l)).filter((l) =>
    l.msg === "access log batch failed"
  );
  assertEquals(failures.map((l) => l.rows), [2, 1, 1]);
  ok(logger.lines.some((l) => l.includes("dropped_total")), "the drops are reported");
  await log.stop();
  assertEquals(repo.count(), 4);
});

Deno.test("records are stored compactly and every read gives back the whole record's JSON; rows stored whole still read as they are", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const masked = record({
    query: "token=secret&x=1",
    action: "block",
    status: 403,
    user_agent: 'curl "8"\n',
    chain: [
      { check: "site", result: "match", us: 2 },
      { check: "engine", result: "block", us: 40, rule: "xss.tag" },
    ],
    finding: {
      class: "xss",
      confidence: "medium",
      score: 60,
      location: "header:authorization",
      evidence: "<script>",
      rule: "xss.tag",
    },
    findings: 2,
    latency_us: { total: 50, waf: 50, upstream: null },
  });
  const plain = record({ site_id: null, site: null, time: Date.UTC(2026, 0, 1) + 0.5 });
  const records = [masked, plain];
  assertEquals(repo.insertLines(records.map(recordLines).join("")), 2);
  // A row stored before (or by insertBatch) holds the record as an object.
  const old = record();
  assertEquals(repo.insertBatch([toRow(old)]), 1);
  const raw = store.db.prepare("SELECT trace_id, record FROM access_logs ORDER BY id").all() as {
    trace_id: string;
    record: string;
  }[];
  for (const [i, r] of records.entries()) {
    const whole = toRow(r).record;
    ok(raw[i]!.record.startsWith("["), "a compact record is an array");
    ok(!raw[i]!.record.includes(r.trace_id), "the columns' values are not repeated");
    ok(raw[i]!.record.length < whole.length * 0.75, `${raw[i]!.record.length} of ${whole.length}`);
  }
  assertEquals(raw[2]!.record, toRow(old).record);
  const expected = [...records, old].map(toRow);
  // The listing, the lookup by trace id, the shipper's reads and the sinks' rows: whole records.
  assertEquals(repo.list({ limit: 10 }).reverse().map(({ id: _, ...row }) => row), expected);
  for (const r of expected) assertEquals(repo.get(r.trace_id)?.record, r.record);
  assertEquals(repo.readAfter(0, 10).rows.map(({ id: _, ...row }) => row), expected);
  assertEquals(parseRowLines(records.map(recordLines).join("")), expected.slice(0, 2));
  const stored = JSON.parse(expected[0]!.record);
  assertEquals([stored.query, stored.finding.evidence], [
    "token=[masked]&x=1",
    "[masked: 8 characters]",
  ]);
});

Deno.test("stored evidence and queries cut at their limits never end in half a surrogate pair", () => {
  const evidence = safeEvidence("query:q", "a".repeat(199) + "😀tail");
  assertEquals(evidence, "a".repeat(199) + "…");
  ok(evidence.isWellFormed());
  const query = safeQuery("q=" + "b".repeat(1021) + "😀&x=1");
  assertEquals(query, "q=" + "b".repeat(1021) + "…");
  ok(query.isWellFormed());
  // A whole pair at the end stays.
  assertEquals(safeEvidence("query:q", "a".repeat(198) + "😀tail"), "a".repeat(198) + "😀…");
});

/**
 * A writer that stalls until released (a starved thread, a locked store): every batch it is
 * given waits; `release()` answers them all, storing their rows in `repo`.
 */
function stalledWriter(direct: AccessLogWriter) {
  const waiting: Array<() => void> = [];
  let stalled = true;
  const writer: AccessLogWriter = {
    ...direct,
    writeLines: (lines, o) =>
      stalled
        ? new Promise((resolve, reject) =>
          waiting.push(() => direct.writeLines(lines, o).then(resolve, reject))
        )
        : direct.writeLines(lines, o),
  };
  return {
    writer,
    release() {
      stalled = false;
      for (const answer of waiting.splice(0)) answer();
    },
  };
}

Deno.test("a flood of passed records past the queue's size, the writer stalled: every blocked, challenged and logged record is stored, the passed ones left out are counted per site", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const stall = stalledWriter(directWriter(repo));
  const log = createAccessLog({
    queueSize: 200,
    batchSize: 50,
    retentionDays: 2,
    maxRecords: 100_000,
    flushIntervalMs: 10,
  }, {
    repo,
    clock: new FakeClock(Date.UTC(2026, 0, 10)),
    logger: createMemoryLogger(),
    writer: stall.writer,
  });
  log.start();
  const verdicts: AccessRecord[] = [];
  let passed = 0;
  try {
    // 5,000 passed requests on two sites, from this thread and as worker batches, with an
    // attack's records among them; the flush timer hands everything taken to the stalled
    // writer, so the rows held stay past the queue's size.
    for (let i = 0; i < 50; i++) {
      for (let j = 0; j < 50; j++) {
        log.push(record({ site: j % 2 ? "shop" : "blog" }));
        passed++;
      }
      log.pushRows(passedRows(Array.from({ length: 50 }, () => record({ site: "shop" }))));
      passed += 50;
      const action = (["block", "challenge", "log"] as const)[i % 3]!;
      const v = record({ action, status: action === "log" ? 200 : 403, site: "shop" });
      verdicts.push(v);
      ok(log.push(v), "a verdict is taken");
      if (i % 5 === 0) {
        const w = record({ action: "block", status: 429, site: "blog" });
        verdicts.push(w);
        // A worker's batch with a verdict among passed rows: the verdict is taken even when
        // the passed ones are not.
        log.pushRows({ ...passedRows([record()]), lines: rowLines(toRow(w)), count: 1 });
        passed++;
      }
      // The timer's flushes run between the bursts.
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const held = log.stats();
    ok(held.queued > 200, `the rows held passed the queue's size (${held.queued})`);
    ok(held.queued <= 800, `and stayed under the verdicts' ceiling (${held.queued})`);
  } finally {
    stall.release();
    await log.stop();
  }
  const stats = log.stats();
  assertEquals(stats.dropped, 0);
  assertEquals(stats.dropped_verdicts, 0);
  for (const v of verdicts) {
    assertEquals((await log.get(v.trace_id))?.action, v.action, `${v.action} ${v.trace_id}`);
  }
  ok(stats.sampled > passed / 2, `most passed records were sampled out (${stats.sampled})`);
  // Every record is either stored or counted: nothing is left out silently.
  assertEquals(repo.count() + stats.sampled, passed + verdicts.length);
  assertEquals(stats.written, repo.count());
  const sites = stats.sampled_sites;
  assertEquals(Object.keys(sites).sort(), ["", "blog", "shop"].filter((k) => (sites[k] ?? 0) > 0));
  assertEquals(Object.values(sites).reduce((a, b) => a + b, 0), stats.sampled);
  ok((sites["shop"] ?? 0) > (sites["blog"] ?? 0), JSON.stringify(sites));
});

Deno.test("without a spill file, verdicts past four times the queue's size are dropped and counted by site and verdict", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const stall = stalledWriter(directWriter(repo));
  const log = createAccessLog(
    { queueSize: 100, batchSize: 500, retentionDays: 2, maxRecords: 100_000 },
    {
      repo,
      clock: new FakeClock(Date.UTC(2026, 0, 10)),
      logger: createMemoryLogger(),
      writer: stall.writer,
    },
  );
  for (let i = 0; i < 400; i++) ok(log.push(record({ action: "block", status: 403 })));
  assertEquals(log.push(record({ action: "block", status: 403 })), false);
  const w = record({ action: "challenge" });
  assertEquals(log.pushRows({ ...passedRows([]), lines: rowLines(toRow(w)), count: 1 }), false);
  assertEquals(log.stats().dropped_verdicts, 2);
  assertEquals(log.stats().dropped, 2);
  assertEquals(log.stats().dropped_sites, { shop: { block: 1, challenge: 1 } });
  assertEquals(log.stats().sampled, 0);
  const flushed = log.flush();
  stall.release();
  assertEquals(await flushed, 400);
  await log.stop();
});
