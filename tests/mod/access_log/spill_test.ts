/**
 * The access log under overload with its spill file: verdicts past the in-memory ceiling and
 * batches the writer refused go to the file on disk and reach the store once the writer takes
 * them; passed records are sampled and counted per site; only what the file cannot take is
 * lost, counted by site and verdict.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { record } from "../../_helpers/records.ts";
import { testStore } from "../../_helpers/store.ts";
import { waitFor } from "../../_helpers/wait.ts";
import { createAccessLogRepo } from "../../../db/access_log_repo.ts";
import { createAccessLog } from "../../../mod/access_log/access_log.ts";
import { lineFormat, rowLines } from "../../../mod/access_log/lines.ts";
import { type AccessRecord, toRow } from "../../../mod/access_log/record.ts";
import { RETRY_MS } from "../../../mod/access_log/spill_drain.ts";
import type { RowBatch } from "../../../mod/access_log/write_queue.ts";
import { type AccessLogWriter, directWriter } from "../../../mod/access_log/writer.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { accessLogSamples } from "../../../mod/monitor/metrics.ts";
import { Exposition } from "../../../mod/monitor/exposition.ts";
import type { Db } from "../../../db/store.ts";

/** A worker's batch: verdict rows and passed rows apart, the passed ones counted per site. */
function workerBatch(verdicts: readonly AccessRecord[], passed: readonly AccessRecord[]): RowBatch {
  const sites = new Map<string, number>();
  for (const r of passed) sites.set(r.site ?? "", (sites.get(r.site ?? "") ?? 0) + 1);
  return {
    lines: verdicts.map((r) => rowLines(toRow(r))).join(""),
    count: verdicts.length,
    passLines: passed.map((r) => rowLines(toRow(r))).join(""),
    passCount: passed.length,
    passSites: [...sites],
    observed: [],
  };
}

/** A writer that holds every batch until released (a starved writer thread). */
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

function storedIds(db: Db): Set<string> {
  const rows = db.prepare("SELECT trace_id FROM access_logs").all() as { trace_id: string }[];
  return new Set(rows.map((r) => r.trace_id));
}

const blocked = (site: string) => record({ action: "block", status: 403, site });
/** A rate-limited request: blocked by the rate limit, 429. */
const limited = (site: string) =>
  record({
    action: "block",
    status: 429,
    site,
    chain: [{ check: "rate_limit", result: "block", us: 2 }],
  });
const challenged = (site: string) => record({ action: "challenge", status: 403, site });

Deno.test("a flood of passed records with a few blocked ones through a full queue: every blocked record is stored, the passed ones sampled and counted per site", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const stall = stalledWriter(directWriter(repo));
  const logger = createMemoryLogger("json");
  const spillPath = `${store.dir}/access_log.spill`;
  const log = createAccessLog(
    { queueSize: 100, batchSize: 50, retentionDays: 2, maxRecords: 1_000_000, spillPath },
    { repo, clock: new FakeClock(Date.UTC(2026, 0, 10)), logger, writer: stall.writer },
  );
  await log.opened();
  const verdicts: AccessRecord[] = [];
  let passed = 0;
  // 12,000 passed requests on two sites, from this thread and as worker batches, and 400
  // blocked, rate-limited and challenged ones among them; nothing is written meanwhile.
  for (let i = 0; i < 200; i++) {
    for (let j = 0; j < 30; j++) {
      log.push(record({ site: j % 3 ? "shop" : "blog" }));
      passed++;
    }
    const v = [blocked("shop"), limited("blog"), challenged("shop")][i % 3]!;
    verdicts.push(v);
    ok(log.push(v), `verdict ${i} is kept`);
    const w = limited("shop");
    verdicts.push(w);
    const flood = Array.from({ length: 30 }, () => record({ site: "shop" }));
    passed += flood.length;
    log.pushRows(workerBatch([w], flood));
    // The timer's flushes hand what is queued to the stalled writer.
    if (i % 10 === 9) void log.flush();
  }
  const during = log.stats();
  ok(during.spilled > 0, `verdicts past the ceiling went to the spill file (${during.spilled})`);
  assertEquals(during.spill_rows, during.spilled);
  ok(during.queued <= 400, `memory held at most the ceiling (${during.queued})`);
  assertEquals(during.sample_every, 0);
  assertEquals(during.dropped, 0);
  ok(
    logger.lines.some((l) => l.includes("access log spilling records to disk")),
    "the spilling is logged",
  );
  stall.release();
  await log.stop();

  const stats = log.stats();
  const ids = storedIds(store.db);
  for (const v of verdicts) ok(ids.has(v.trace_id), `${v.action} ${v.status} ${v.trace_id}`);
  assertEquals(stats.dropped, 0);
  assertEquals(stats.dropped_verdicts, 0);
  assertEquals(stats.dropped_sites, {});
  assertEquals(stats.spill_rows, 0);
  assertEquals((await Deno.stat(spillPath)).size, 0, "the spill file is emptied");
  // Every record is stored or counted as sampled: nothing left out silently.
  assertEquals(ids.size + stats.sampled, passed + verdicts.length);
  assertEquals(stats.written, ids.size);
  const sites = stats.sampled_sites;
  assertEquals(Object.keys(sites).sort(), ["blog", "shop"]);
  assertEquals((sites.blog ?? 0) + (sites.shop ?? 0), stats.sampled);
  ok((sites.shop ?? 0) > (sites.blog ?? 0), JSON.stringify(sites));
  const sampling = logger.lines.map((l) => JSON.parse(l)).find((l) =>
    l.msg === "access log sampling passed requests (the writer is behind)"
  );
  ok(sampling?.sampled_sites?.shop > 0, `the warning has the figures: ${JSON.stringify(sampling)}`);
  // The counts as metrics.
  const out = new Exposition();
  accessLogSamples(out, { ...stats, sinks: [] });
  const lines = out.text().split("\n");
  ok(lines.includes(`waf_access_log_sampled_total{site="shop"} ${sites.shop}`), out.text());
  ok(lines.includes(`waf_access_log_sampled_total{site="blog"} ${sites.blog}`), out.text());
  ok(lines.includes("waf_access_log_dropped_verdicts_total 0"), out.text());
  ok(lines.includes(`waf_access_log_spilled_total ${stats.spilled}`), out.text());
});

Deno.test("when the spill file is full, verdicts are dropped and counted by site and verdict, with an error", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const stall = stalledWriter(directWriter(repo));
  const logger = createMemoryLogger("json");
  const one = rowLines(toRow(blocked("blog"))).length;
  const log = createAccessLog({
    queueSize: 10,
    batchSize: 50,
    retentionDays: 2,
    maxRecords: 1000,
    spillPath: `${store.dir}/access_log.spill`,
    spillMaxBytes: 3 * one + 10,
  }, { repo, clock: new FakeClock(Date.UTC(2026, 0, 10)), logger, writer: stall.writer });
  await log.opened();
  for (let i = 0; i < 40; i++) ok(log.push(blocked("shop")));
  const kept = Array.from({ length: 5 }, () => log.push(blocked("blog")));
  assertEquals(kept, [true, true, true, false, false]);
  assertEquals(log.pushRows(workerBatch([challenged("blog")], [])), false);
  const s = log.stats();
  assertEquals([s.spilled, s.dropped, s.dropped_verdicts], [3, 3, 3]);
  assertEquals(s.dropped_sites, { blog: { block: 2, challenge: 1 } });
  stall.release();
  await log.stop();
  assertEquals(repo.count(), 43);
  const error = logger.lines.map((l) => JSON.parse(l)).find((l) =>
    l.msg.startsWith("access log records dropped")
  );
  assertEquals(error?.level, "error");
  assertEquals(error?.dropped_verdicts, 3);
  assertEquals(error?.dropped_sites, { blog: { block: 2, challenge: 1 } });
});

Deno.test("a batch the writer refuses goes to the spill file and is written once the writer takes it again, retried on the clock", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const direct = directWriter(repo);
  const clock = new FakeClock(Date.UTC(2026, 0, 10));
  let refusing = true;
  let asked = 0;
  const log = createAccessLog({
    queueSize: 100,
    batchSize: 50,
    retentionDays: 2,
    maxRecords: 1000,
    spillPath: `${store.dir}/access_log.spill`,
  }, {
    repo,
    clock,
    logger: createMemoryLogger(),
    writer: {
      ...direct,
      writeLines: (lines, o) => {
        if (o.count > 0) asked++;
        return refusing && o.count > 0
          ? Promise.reject(new Error("The access-log writer thread failed; restarting soon"))
          : direct.writeLines(lines, o);
      },
    },
  });
  await log.opened();
  const lost = [blocked("shop"), record(), limited("blog")];
  for (const r of lost) log.push(r);
  assertEquals(await log.flush(), 0);
  assertEquals([log.stats().spill_rows, log.stats().dropped], [3, 0]);
  // The next flush tries the spill: refused again, so it waits RETRY_MS before the next try.
  await log.flush();
  await waitFor(() => asked === 2, "the spill's first try");
  await log.flush();
  await new Promise((r) => setTimeout(r, 20));
  assertEquals(asked, 2, "no try before the clock says so");
  refusing = false;
  clock.advance(RETRY_MS);
  await log.flush();
  await waitFor(() => log.stats().spill_rows === 0, "the spill written back");
  const ids = storedIds(store.db);
  for (const r of lost) ok(ids.has(r.trace_id), r.trace_id);
  assertEquals(log.stats().dropped, 0);
  await log.stop();
});

Deno.test("a spill file left by an earlier process is written to the store after the next start", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const spillPath = `${store.dir}/access_log.spill`;
  const options = { queueSize: 100, batchSize: 50, retentionDays: 2, maxRecords: 1000, spillPath };
  const refusing: AccessLogWriter = {
    ...directWriter(repo),
    writeLines: (_lines, o) =>
      o.count > 0 ? Promise.reject(new Error("database is locked")) : Promise.resolve(0),
  };
  const first = createAccessLog(options, {
    repo,
    clock: new FakeClock(),
    logger: createMemoryLogger(),
    writer: refusing,
  });
  await first.opened();
  const kept = [blocked("shop"), challenged("blog"), record()];
  for (const r of kept) first.push(r);
  await first.stop();
  assertEquals(first.stats().spill_rows, 3);
  // A cut-off row at the end (the process ended mid-append) is cut off at the next start.
  await Deno.writeTextFile(spillPath, '["cut', { append: true });

  const logger = createMemoryLogger("json");
  const second = createAccessLog(options, {
    repo,
    clock: new FakeClock(),
    logger,
    writer: directWriter(repo),
  });
  await second.opened();
  assertEquals(second.stats().spill_rows, 3);
  ok(logger.lines.some((l) => l.includes("spill file of an earlier run found")));
  await second.stop();
  const ids = storedIds(store.db);
  for (const r of kept) ok(ids.has(r.trace_id), r.trace_id);
  assertEquals((await Deno.stat(spillPath)).size, 0);
});
