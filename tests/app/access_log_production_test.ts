/**
 * The production profile's access log, two controllers on the real PostgreSQL (127.0.0.1:5432,
 * database `test`, a schema of each test's own, dropped after): each writes its records into its
 * own SQLite file through its queue and ships them; either reads every controller's records. A
 * controller reaching the database through a loopback relay the test refuses keeps writing
 * locally, answers from its own records meanwhile (`source: "local"`, `partial: true`), and
 * ships what it wrote from its cursor once the database answers again.
 */
import postgres from "postgres";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { record } from "../_helpers/records.ts";
import { hasPostgres, postgresDsn, REQUIRE_SERVICES } from "../_helpers/services.ts";
import { testStore } from "../_helpers/store.ts";
import { startTcpRelay } from "../_helpers/tcp_relay.ts";
import { waitFor } from "../_helpers/wait.ts";
import { productionAccessLog } from "../../app/access_log_production.ts";
import { createAccessLogRepo } from "../../db/access_log_repo.ts";
import { sqliteAccessLogReader } from "../../db/access_log_reader.ts";
import { createAccessLog } from "../../mod/access_log/access_log.ts";
import { lineFormat } from "../../mod/access_log/lines.ts";
import { directWriter } from "../../mod/access_log/writer.ts";
import { systemClock } from "../../mod/core/clock.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";

const pg = await hasPostgres();
const ignore = !pg && !REQUIRE_SERVICES && Deno.env.get("CI") === undefined;
const dsn = () => postgresDsn(pg || !ignore);

/** A fresh schema for `fn`, dropped after. */
async function withSchema(fn: (schema: string) => Promise<void>): Promise<void> {
  const schema = `alog_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const admin = postgres(dsn(), { max: 1, onnotice: () => {} });
  try {
    await fn(schema);
  } finally {
    await admin.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

/** One controller's access log: its own SQLite store, shipping to and reading `schema`. */
async function controller(id: string, schema: string, url = dsn()) {
  const store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const logger = createMemoryLogger();
  const { sink, views } = productionAccessLog({
    database: { dsn: url, schema, poolSize: 4, connectTimeoutMs: 1_000, statementTimeoutMs: 2_000 },
    controllerId: id,
    source: directWriter(repo),
    local: sqliteAccessLogReader(repo),
    siteIds: () => [],
    batchSize: 50,
    clock: systemClock,
    logger,
    tuning: { retryMs: 100, minBackoffMs: 50, maxBackoffMs: 200, idlePollMs: 50 },
  });
  const log = createAccessLog(
    { queueSize: 1_000, batchSize: 50, retentionDays: 30, maxRecords: 100_000 },
    { repo, clock: systemClock, logger, sinks: [sink], views },
  );
  log.start();
  return {
    log,
    repo,
    logger,
    /** Writes what is queued and waits until the shipper has shipped it. */
    async shipped() {
      await log.flush();
      await waitFor(() => sink.stats().up && sink.stats().lag_rows === 0, `${id} shipped`);
    },
    async [Symbol.asyncDispose]() {
      await log.stop();
      await store[Symbol.asyncDispose]();
    },
  };
}

const blocked = (client: string) =>
  record({
    action: "block",
    status: 403,
    client_ip: client,
    chain: [{ check: "ip_list", result: "block", us: 1, rule: "ip_1" }],
  });

Deno.test({
  name:
    "production access log: records of two controllers are both visible through the PostgreSQL reader (needs PostgreSQL)",
  ignore,
  fn: () =>
    withSchema(async (schema) => {
      await using a = await controller("ctl-a", schema);
      await using b = await controller("ctl-b", schema);
      const onA = [record({ client_ip: "192.0.2.1" }), blocked("203.0.113.1")];
      const onB = [record({ client_ip: "192.0.2.2" }), blocked("203.0.113.2")];
      for (const r of onA) a.log.push(r);
      for (const r of onB) b.log.push(r);
      await a.shipped();
      await b.shipped();

      for (const reader of [a, b]) {
        const page = await reader.log.page({ limit: 50 });
        assertEquals([page.source, page.partial], ["deployment", false]);
        assertEquals(
          page.rows.map((r) => r.trace_id).sort(),
          [...onA, ...onB].map((r) => r.trace_id).sort(),
        );
      }
      // The block that happened on B, looked up on A.
      const found = await a.log.lookup(onB[1]!.trace_id);
      assertEquals([found.row?.client_ip, found.source, found.partial], [
        "203.0.113.2",
        "deployment",
        false,
      ]);
      const counts = await a.log.counts({ from: 0, to: Date.UTC(2027, 0, 1) });
      assertEquals([counts.total, counts.by_action, counts.source], [
        4,
        { pass: 2, block: 2 },
        "deployment",
      ]);
      const top = await b.log.top("client_ip", { from: 0, to: Date.UTC(2027, 0, 1) }, 10);
      assertEquals(top.items.map((e) => e.key).sort(), ["203.0.113.1", "203.0.113.2"]);
      // Each record carries the controller that wrote it; each controller's file holds its own.
      const sql = postgres(dsn(), { max: 1, onnotice: () => {} });
      const rows = await sql.unsafe(
        `SELECT controller_id, COUNT(*)::int AS n FROM ${schema}.deployment_access_logs
         GROUP BY controller_id ORDER BY controller_id`,
      );
      await sql.end();
      assertEquals(rows.map((r) => [r["controller_id"], r["n"]]), [["ctl-a", 2], ["ctl-b", 2]]);
      assertEquals([a.repo.count(), b.repo.count()], [2, 2]);
    }),
});

Deno.test({
  name:
    "production access log: with the database unreachable, writes go on locally, reads answer this controller's records, and shipping resumes (needs PostgreSQL)",
  ignore,
  fn: () =>
    withSchema(async (schema) => {
      await using relay = await startTcpRelay({ hostname: "127.0.0.1", port: 5432 });
      const viaRelay = dsn().replace("127.0.0.1:5432", `127.0.0.1:${relay.port}`);
      await using a = await controller("ctl-a", schema, viaRelay);
      await using b = await controller("ctl-b", schema);
      const before = blocked("203.0.113.1");
      a.log.push(before);
      b.log.push(blocked("203.0.113.9"));
      await a.shipped();
      await b.shipped();
      assertEquals((await a.log.page({ limit: 50 })).rows.length, 2);

      await relay.set("refuse");
      const during = [blocked("198.51.100.1"), record({ client_ip: "198.51.100.2" })];
      for (const r of during) ok(a.log.push(r), "the queue takes the record");
      await a.log.flush();
      assertEquals(a.repo.count(), 3, "every record is in the local file");

      const page = await a.log.page({ limit: 50 });
      assertEquals([page.source, page.partial], ["local", true]);
      assertEquals(
        page.rows.map((r) => r.trace_id).sort(),
        [before, ...during].map((r) => r.trace_id).sort(),
      );
      const summary = await a.log.summary({
        from: 0,
        to: Date.UTC(2027, 0, 1),
        buckets: 1,
        top: 5,
      });
      assertEquals([summary.totals.requests, summary.source, summary.partial], [3, "local", true]);
      const one = await a.log.lookup(during[0]!.trace_id);
      assertEquals([one.row?.trace_id, one.source, one.partial], [
        during[0]!.trace_id,
        "local",
        true,
      ]);
      ok(a.log.stats().deployment_reads?.up === false, "the reads' health says so");
      ok(
        a.logger.lines.some((l) => l.includes("reading this controller's records")),
        "the fallback is logged once",
      );

      await relay.set("up");
      await waitFor(async () => {
        const p = await a.log.page({ limit: 50 });
        return p.source === "deployment" && p.rows.length === 4;
      }, "the deployment's records again, with what was written during the outage");
      await a.shipped();
      const again = await b.log.page({ limit: 50 });
      assertEquals(
        again.rows.map((r) => r.trace_id).sort().includes(during[1]!.trace_id),
        true,
        "B sees what A wrote while the database was unreachable",
      );
    }),
});
