/**
 * The PostgreSQL access-log sink against the real PostgreSQL (127.0.0.1:5432, database `test`),
 * through a loopback TCP relay the test refuses, stalls and slows (the system's server is never
 * stopped): it ships from the local store by a persisted cursor, so an outage loses nothing, a
 * stalled connection is noticed by the insert deadline, a slow one still ships, and lag is
 * reported in rows and seconds. The server-level test sends traffic through the data plane
 * during an outage and finds every record in PostgreSQL afterwards.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { record } from "../../_helpers/records.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../../_helpers/services.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";
import { testStore } from "../../_helpers/store.ts";
import { startTcpRelay } from "../../_helpers/tcp_relay.ts";
import { startUpstream } from "../../_helpers/upstream.ts";
import { createAccessLogRepo } from "../../../db/access_log_repo.ts";
import { lineFormat } from "../../../mod/access_log/lines.ts";
import { createWorkerWriter } from "../../../mod/access_log/worker_writer.ts";
import { directWriter, type ShipSource } from "../../../mod/access_log/writer.ts";
import { createPgSink } from "../../../db/pg_sink.ts";
import { recordLines, toRow } from "../../../mod/access_log/record.ts";
import postgres from "postgres";
import { systemClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { createPgShipper, type PgShipperStats } from "../../../mod/access_log/pg_shipper.ts";
import { randomHex, systemRandom } from "../../../mod/core/random.ts";
import { waitFor } from "../../_helpers/wait.ts";

const pg = await hasPostgres();
const ignore = ignoreWithout(pg);
const dsn = () => postgresDsn(pg);

const viaRelay = (port: number) => dsn().replace("127.0.0.1:5432", `127.0.0.1:${port}`);

/** A store with `n` stored records, a random PostgreSQL table, and a shipper through `dsnOf`. */
async function rig(options: { port?: number; insertTimeoutMs?: number } = {}) {
  const store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  const source = directWriter(repo);
  const table = `waf_access_logs_test_${randomHex(systemRandom, 4)}`;
  const check = createPgSink({ dsn: dsn(), poolSize: 1, table });
  const logger = createMemoryLogger();
  const shipper = (cursorName = "postgresql", from: ShipSource = source) =>
    createPgShipper(
      createPgSink({
        dsn: options.port ? viaRelay(options.port) : dsn(),
        poolSize: 1,
        table,
        connectTimeoutSeconds: 1,
      }),
      from,
      {
        batchSize: 50,
        insertTimeoutMs: options.insertTimeoutMs ?? 2_000,
        minBackoffMs: 100,
        maxBackoffMs: 400,
        idlePollMs: 50,
        cursorName,
      },
      { logger, clock: systemClock },
    );
  const add = (n: number) => repo.insertBatch(Array.from({ length: n }, () => toRow(record())));
  return {
    store,
    repo,
    table,
    check,
    logger,
    shipper,
    add,
    async [Symbol.asyncDispose]() {
      await check.drop().catch(() => {});
      await check.close();
      await store[Symbol.asyncDispose]();
    },
  };
}

const stats = (s: { stats(): PgShipperStats }) => s.stats();

Deno.test({
  name:
    "the sink ships stored records by a persisted cursor, and a restart continues from it (needs PostgreSQL)",
  ignore,
  async fn() {
    await using r = await rig();
    r.add(5); // stored before the sink first started: not replayed
    await r.check.ensureTable();
    const first = r.shipper();
    try {
      await waitFor(() => stats(first).cursor === 5, "the cursor at the present");
      r.add(120);
      await waitFor(() => stats(first).shipped_rows === 120, "120 shipped rows");
      assertEquals(await r.check.count(), 120);
      assertEquals(stats(first).up, true);
      assertEquals(stats(first).lag_rows, 0);
    } finally {
      await first.close();
    }
    assertEquals(r.repo.cursor("postgresql"), 125);
    r.add(30);
    const second = r.shipper();
    try {
      await waitFor(() => stats(second).shipped_rows === 30, "the 30 stored meanwhile");
      assertEquals(await r.check.count(), 150, "nothing shipped twice, nothing missed");
    } finally {
      await second.close();
    }
  },
});

Deno.test({
  name:
    "a new sink ships every row written after it was created, however late the writer thread answers (needs PostgreSQL)",
  ignore,
  async fn() {
    // The server's composition: the writer thread, and a shipper created with it. Rows written
    // right after the shipper was created, before the thread (still starting) answered anything,
    // are after the sink's start. The shipper used to ask for its saved cursor, then, once that
    // answer came, for the newest id: the rows posted in between were behind its cursor, never
    // shipped and never counted (the server-level test lost its first 10 to 180 records so).
    await using r = await rig();
    r.add(5); // stored before the sink existed: not replayed
    await r.check.ensureTable();
    const writer = createWorkerWriter(`${r.store.dir}/waf.db`);
    const shipper = createPgShipper(
      createPgSink({ dsn: dsn(), poolSize: 1, table: r.table }),
      writer,
      { batchSize: 50, insertTimeoutMs: 2_000, idlePollMs: 50 },
      { logger: r.logger, clock: systemClock },
    );
    try {
      const lines = Array.from({ length: 30 }, () => recordLines(record())).join("");
      assertEquals(await writer.writeLines(lines, { count: 30 }), 30);
      await waitFor(() => stats(shipper).cursor === 35, "the cursor at the newest row");
      assertEquals(stats(shipper).shipped_rows, 30, "the rows written after the sink started");
      assertEquals(await r.check.count(), 30);
      // Saved through the writer thread after the batch is counted (pg_shipper.ts): a request
      // queued behind others on a thread at nice 19, so it lands a moment after the stats.
      await waitFor(() => r.repo.cursor("postgresql") === 35, "the cursor saved at the newest row");
    } finally {
      await shipper.close();
      await writer.close();
    }
  },
});

Deno.test({
  name:
    "a refused connection: nothing is lost; the sink catches up when PostgreSQL is back (needs PostgreSQL)",
  ignore,
  async fn() {
    await using relay = await startTcpRelay({ hostname: "127.0.0.1", port: 5432 });
    await using r = await rig({ port: relay.port });
    await r.check.ensureTable();
    const shipper = r.shipper();
    try {
      await waitFor(
        () => stats(shipper).cursor === 0 && r.repo.cursor("postgresql") === 0,
        "start",
      );
      await relay.set("refuse");
      r.add(400);
      await waitFor(() => stats(shipper).failures >= 2, "failed attempts");
      const down = stats(shipper);
      assertEquals(down.up, false);
      ok(down.last_error !== null && down.last_error.length > 0, "the error is reported");
      assertEquals(down.lag_rows, 400);
      ok(down.lag_seconds >= 0);
      ok(r.logger.lines.some((l) => l.includes("PostgreSQL access-log sink unavailable")));
      await relay.set("up");
      await waitFor(() => stats(shipper).shipped_rows === 400, "the backlog shipped");
      assertEquals(await r.check.count(), 400);
      assertEquals(stats(shipper).up, true);
      assertEquals(stats(shipper).lag_rows, 0);
      assertEquals(stats(shipper).skipped_rows, 0);
    } finally {
      await shipper.close();
    }
  },
});

/**
 * A relay that passes everything except PostgreSQL's first answer to an INSERT (its command tag,
 * sent once the rows are committed): it drops that answer and closes the connection, so the
 * client sees its connection die with its rows in the table, the ambiguous outcome. Later
 * connections pass normally.
 */
function loseFirstInsertAnswer(): { port: number; lost(): boolean; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  let lost = false;
  const end = (...cs: Deno.Conn[]) => {
    for (const c of cs) {
      try {
        c.close();
      } catch { /* closed already */ }
      conns.delete(c);
    }
  };
  const copy = async (from: Deno.Conn, to: Deno.Conn, answers: boolean) => {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (let n; (n = await from.read(buf)) !== null;) {
        const chunk = buf.subarray(0, n);
        if (answers && !lost && new TextDecoder("latin1").decode(chunk).includes("INSERT 0 ")) {
          lost = true;
          break;
        }
        await to.write(chunk);
      }
    } catch { /* closed */ }
    end(from, to);
  };
  (async () => {
    for await (const client of listener) {
      const server = await Deno.connect({ hostname: "127.0.0.1", port: 5432 });
      conns.add(client).add(server);
      void copy(client, server, false);
      void copy(server, client, true);
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    lost: () => lost,
    close() {
      listener.close();
      end(...conns);
    },
  };
}

Deno.test({
  name:
    "an insert whose answer is lost (committed, connection gone) is retried and kept once (needs PostgreSQL)",
  ignore,
  async fn() {
    const relay = loseFirstInsertAnswer();
    try {
      await using r = await rig({ port: relay.port });
      await r.check.ensureTable();
      const shipper = r.shipper();
      try {
        await waitFor(() => r.repo.cursor("postgresql") === 0, "start");
        r.add(30);
        await waitFor(() => stats(shipper).shipped_rows === 30, "30 shipped");
        ok(relay.lost(), "the relay dropped the answer to the first insert");
        ok(stats(shipper).failures >= 1, "the lost answer failed the attempt");
        assertEquals(await r.check.count(), 30, "every row, once");
        assertEquals(stats(shipper).cursor, 30);
      } finally {
        await shipper.close();
      }
    } finally {
      relay.close();
    }
  },
});

Deno.test({
  name:
    "a stalled connection (no error, no answer) is noticed by the insert deadline and replaced (needs PostgreSQL)",
  ignore,
  async fn() {
    await using relay = await startTcpRelay({ hostname: "127.0.0.1", port: 5432 });
    await using r = await rig({ port: relay.port, insertTimeoutMs: 500 });
    await r.check.ensureTable();
    r.add(10); // stored before the sink existed: not replayed
    const shipper = r.shipper();
    try {
      await waitFor(() => r.repo.cursor("postgresql") !== undefined, "start");
      const start = r.repo.cursor("postgresql")!;
      assertEquals(start, 10);
      r.add(50);
      await waitFor(() => stats(shipper).cursor === start + 50, "healthy shipping");
      await relay.set("stall");
      r.add(200);
      await waitFor(() => stats(shipper).timeouts >= 1, "a timed-out insert");
      const stalled = stats(shipper);
      assertEquals(stalled.up, false, "health notices the stall");
      ok(stalled.last_error!.includes("no answer from PostgreSQL"), stalled.last_error!);
      ok(stalled.lag_rows >= 200);
      await relay.set("up");
      await waitFor(() => stats(shipper).cursor === start + 250, "the backlog after the stall");
      assertEquals(await r.check.count(), 250);
      assertEquals(stats(shipper).up, true);
    } finally {
      await shipper.close();
    }
  },
});

Deno.test({
  name:
    "a slow connection still ships everything, with the lag visible meanwhile (needs PostgreSQL)",
  ignore,
  async fn() {
    await using relay = await startTcpRelay({ hostname: "127.0.0.1", port: 5432 });
    await using r = await rig({ port: relay.port, insertTimeoutMs: 5_000 });
    await r.check.ensureTable();
    const shipper = r.shipper();
    try {
      await waitFor(() => r.repo.cursor("postgresql") !== undefined, "start");
      await relay.set("slow", { delayMs: 150 });
      r.add(300);
      let sawLag = false;
      await waitFor(
        () => {
          const s = stats(shipper);
          if (s.lag_rows > 0 && s.lag_seconds > 0) sawLag = true;
          return s.shipped_rows === 300;
        },
        "300 rows over a slow link",
        60_000,
      );
      ok(sawLag, "lag reported while behind");
      assertEquals(stats(shipper).timeouts, 0);
      assertEquals(await r.check.count(), 300);
    } finally {
      await shipper.close();
    }
  },
});

Deno.test({
  name: "rows retention deleted before they were shipped are counted as skipped (needs PostgreSQL)",
  ignore,
  async fn() {
    await using relay = await startTcpRelay({ hostname: "127.0.0.1", port: 5432 });
    await using r = await rig({ port: relay.port });
    await r.check.ensureTable();
    const shipper = r.shipper();
    try {
      await waitFor(() => r.repo.cursor("postgresql") !== undefined, "start");
      await relay.set("refuse");
      r.add(100);
      r.repo.prune(0, 40); // keeps the newest 40
      await relay.set("up");
      await waitFor(() => stats(shipper).shipped_rows === 40, "what retention kept");
      assertEquals(stats(shipper).skipped_rows, 60);
    } finally {
      await shipper.close();
    }
  },
});

/**
 * Data-plane requests at a steady pace for `ms`, numbered from `from` (`/<tag>/<n>`); returns
 * how many were answered.
 */
async function traffic(url: string, tag: string, ms: number, perSecond: number, from = 0) {
  let n = from;
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const started = Date.now();
    const batch = Math.max(1, Math.round(perSecond / 10));
    await Promise.all(Array.from({ length: batch }, async () => {
      const res = await fetch(`${url}/${tag}/${n++}`);
      await res.body?.cancel();
    }));
    await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - started))));
  }
  return n - from;
}

Deno.test({
  name:
    "a server's PostgreSQL sink delivers every record of an outage once PostgreSQL is back (needs PostgreSQL)",
  ignore,
  async fn() {
    const seconds = Number(Deno.env.get("WAF_PG_OUTAGE_SECONDS") ?? "10");
    const rate = Number(Deno.env.get("WAF_PG_OUTAGE_RATE") ?? "100");
    await using relay = await startTcpRelay({ hostname: "127.0.0.1", port: 5432 });
    await using up = startUpstream();
    await using s = await startTestServer({
      config: {
        storage: {
          postgresql: {
            dsn: viaRelay(relay.port),
            pool_size: 1,
            batch_size: 100,
            insert_timeout: "2s",
          },
        },
      },
    });
    const check = createPgSink({ dsn: dsn(), poolSize: 1 });
    const tag = `outage-${randomHex(systemRandom, 6)}`;
    const inPg = () => countTagged(dsn(), tag);
    try {
      s.dataPlane.sites.create(siteInput({ hosts: ["127.0.0.1"], upstreams: [up.url] }), SYSTEM);
      const before = await traffic(s.dataUrl, tag, 1_000, rate);
      const how = Deno.env.get("WAF_PG_OUTAGE_MODE") === "stall" ? "stall" : "refuse";
      await relay.set(how);
      // Numbered on from the first second's: the missing list names requests, not paths two
      // requests shared (it read "990-1089" for a shortfall of the first 180 rows).
      const during = await traffic(s.dataUrl, tag, seconds * 1000, rate, before);
      const sink = () => s.dataPlane.accessLog.stats().sinks[0] as unknown as PgShipperStats;
      console.log(`sink during the outage: up=${sink().up}`);
      ok(sink().up === false, "the sink reports the outage");
      const scrape = s.monitor.metrics.scrape();
      ok(/^waf_pg_sink_up 0$/m.test(scrape), "waf_pg_sink_up 0");
      const lag = Number(/^waf_pg_sink_lag_records (\d+)$/m.exec(scrape)?.[1]);
      ok(lag > 0, `lag metric ${lag}`);
      await relay.set("up");
      const total = before + during;
      await s.dataPlane.accessLog.flush();
      await waitFor(async () => await inPg() >= total, `${total} records in PostgreSQL`, 60_000)
        .catch((err) => console.log(String(err)));
      const delivered = await inPg();
      console.log(
        `${
          Deno.env.get("WAF_PG_OUTAGE_MODE") ?? "refuse"
        } outage ${seconds}s at ~${rate} req/s: ${delivered} of ${total} records delivered (${during} sent during the outage)`,
      );
      // Should it fail, the message says which requests are missing and what the log and the
      // sink counted (a shortfall of the first 10 to 180 records was a sink whose start raced
      // with the writer thread: see the test of a new sink above).
      assertEquals(
        delivered,
        total,
        delivered === total
          ? ""
          : `missing requests ${
            JSON.stringify(await missingTagged(dsn(), tag, total))
          } of ${before} before and ${during} during the outage; access log ${
            JSON.stringify(s.dataPlane.accessLog.stats())
          }`,
      );
      assertEquals(sink().up, true);
      ok(/^waf_pg_sink_lag_records 0$/m.test(s.monitor.metrics.scrape()), "no lag left");
    } finally {
      await check.close();
    }
  },
});

/** The request numbers (`/<tag>/<n>`, n below `total`) whose record is not in PostgreSQL. */
async function missingTagged(dsn: string, tag: string, total: number): Promise<number[]> {
  const sql = postgres(dsn, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql`SELECT path FROM waf_access_logs WHERE path LIKE ${`/${tag}/%`}`;
    const have = new Set(rows.map((r) => Number(String(r["path"]).split("/")[2])));
    return Array.from({ length: total }, (_, n) => n).filter((n) => !have.has(n));
  } finally {
    await sql.end({ timeout: 1 });
  }
}

async function countTagged(dsn: string, tag: string): Promise<number> {
  const { default: postgres } = await import("postgres");
  const sql = postgres(dsn, { max: 1, onnotice: () => {} });
  try {
    const rows =
      await sql`SELECT COUNT(*)::int AS n FROM waf_access_logs WHERE path LIKE ${`/${tag}/%`}`;
    return Number(rows[0]?.["n"] ?? 0);
  } catch (err) {
    if (/does not exist/.test(String(err))) return 0;
    throw err;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

Deno.test({
  name:
    "PostgreSQL gets whole records from compact rows, and a NUL or a split surrogate in a record does not stop the shipping (needs PostgreSQL)",
  ignore,
  async fn() {
    await using r = await rig();
    await r.check.ensureTable();
    const shipper = r.shipper();
    try {
      await waitFor(() => stats(shipper).cursor === 0, "the cursor at the present");
      const plain = record({ user_agent: 'curl "8"\n中文', query: "q=é" });
      // A refused request line keeps its raw target: PostgreSQL's text and jsonb take no NUL.
      const nul = record({ method: "G\u0000T", path: "/a\u0000/../etc/passwd", status: 400 });
      // A lone surrogate (evidence cut inside a pair, before the cut kept pairs whole): jsonb
      // refuses it.
      const split = record({
        action: "block",
        finding: {
          class: "xss",
          confidence: "high",
          score: 90,
          location: "query:q",
          evidence: "<script>" + "a".repeat(100) + "\ud83d",
          rule: "xss.tag",
        },
      });
      const after = record();
      const records = [plain, nul, split, after];
      assertEquals(r.repo.insertLines(records.map(recordLines).join("")), 4);
      await waitFor(() => stats(shipper).shipped_rows === 4, "all four shipped");
      const sql = postgres(dsn(), { max: 1, onnotice: () => {} });
      try {
        const got = new Map(
          (await sql`SELECT trace_id, path, record FROM ${sql(r.table)}`).map((
            row,
          ) => [row["trace_id"], row]),
        );
        assertEquals(got.get(plain.trace_id)?.["record"], JSON.parse(toRow(plain).record));
        assertEquals(got.get(after.trace_id)?.["record"], JSON.parse(toRow(after).record));
        assertEquals(got.get(nul.trace_id)?.["path"], "/a\u2400/../etc/passwd");
        assertEquals(got.get(nul.trace_id)?.["record"].path, "/a\u2400/../etc/passwd");
        assertEquals(got.get(nul.trace_id)?.["record"].method, "G\u2400T");
        const evidence = got.get(split.trace_id)?.["record"].finding.evidence as string;
        assertEquals(evidence, "<script>" + "a".repeat(100) + "\ufffd");
      } finally {
        await sql.end();
      }
    } finally {
      await shipper.close();
    }
  },
});

/**
 * A relay that passes one connection's startup through, then, on the client's first message
 * after it (the first query the connection sends), closes that connection and its own listener:
 * the client's reconnect is refused. Returns the relay's port and a close function.
 */
function refuseAfterStartup(): { port: number; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const conns = new Set<Deno.Conn>();
  let listening = true;
  const closeAll = () => {
    if (listening) listener.close();
    listening = false;
    for (const c of conns) {
      try {
        c.close();
      } catch { /* closed already */ }
    }
    conns.clear();
  };
  (async () => {
    const client = await listener.accept().catch(() => undefined);
    if (client === undefined) return;
    const server = await Deno.connect({ hostname: "127.0.0.1", port: 5432 });
    conns.add(client);
    conns.add(server);
    const buf = new Uint8Array(64 * 1024);
    (async () => {
      try {
        for (let n; (n = await server.read(buf)) !== null;) await client.write(buf.subarray(0, n));
      } catch { /* closed */ }
    })();
    const cbuf = new Uint8Array(64 * 1024);
    try {
      let chunks = 0;
      for (let n; (n = await client.read(cbuf)) !== null;) {
        if (++chunks > 1) break; // the first query: the connection dies, PostgreSQL is gone
        await server.write(cbuf.subarray(0, n));
      }
    } catch { /* closed */ }
    closeAll();
  })();
  return { port, close: closeAll };
}

Deno.test({
  name:
    "a connection that dies after its startup and is then refused leaves no unhandled rejection (the driver's array-types query) (needs PostgreSQL)",
  ignore,
  async fn() {
    const unhandled: string[] = [];
    const onUnhandled = (e: PromiseRejectionEvent) => {
      unhandled.push(String(e.reason));
      e.preventDefault();
    };
    globalThis.addEventListener("unhandledrejection", onUnhandled);
    const relay = refuseAfterStartup();
    const sink = createPgSink({ dsn: viaRelay(relay.port), poolSize: 1, connectTimeoutSeconds: 1 });
    try {
      const err = await sink.version().then(() => undefined, (e) => e as Error);
      ok(err !== undefined && /ECONNREFUSED|CONNECTION/.test(String(err)), String(err));
      // Let the driver's reconnect and any promise it dropped settle.
      await new Promise((r) => setTimeout(r, 300));
      assertEquals(unhandled, []);
    } finally {
      relay.close();
      await sink.close().catch(() => {});
      globalThis.removeEventListener("unhandledrejection", onUnhandled);
    }
  },
});

/** `source` with its first `startCursor` observed (`first`) and, optionally, made to fail. */
function firstStartSeen(source: ShipSource, fail: boolean) {
  const first = Promise.withResolvers<void>();
  const retry = Promise.withResolvers<void>();
  let calls = 0;
  const wrapped: ShipSource = {
    ...source,
    async startCursor(...args) {
      if (++calls === 1) {
        try {
          if (fail) throw new Error("database is locked");
          return await source.startCursor(...args);
        } finally {
          first.resolve();
        }
      }
      await retry.promise;
      return await source.startCursor(...args);
    },
  };
  return { wrapped, first: first.promise, letRetry: retry.resolve };
}

Deno.test({
  name:
    "a sink whose cursor could not be saved at its start ships every row written after it (needs PostgreSQL)",
  ignore,
  async fn() {
    await using r = await rig();
    r.add(5);
    await r.check.ensureTable();
    // The store reads but refuses the cursor's write (a store locked by another writer, a
    // full disk): the start is read, only its save fails.
    r.store.db.exec(
      `CREATE TRIGGER refuse_cursor BEFORE INSERT ON access_log_cursors
       BEGIN SELECT RAISE(ABORT, 'database is locked'); END`,
    );
    const seen = firstStartSeen(directWriter(r.repo), false);
    const shipper = r.shipper("postgresql", seen.wrapped);
    try {
      await seen.first;
      r.add(30);
      r.store.db.exec("DROP TRIGGER refuse_cursor");
      seen.letRetry();
      await waitFor(() => stats(shipper).cursor === 35, "the cursor past the 30 rows");
      assertEquals(stats(shipper).shipped_rows, 30);
      assertEquals(await r.check.count(), 30);
      await waitFor(() => r.repo.cursor("postgresql") === 35, "the cursor saved");
      // The operator was told it was not saved, and is told once it is.
      const told = r.logger.lines.filter((l) => l.includes("where it starts"));
      assertEquals(told.length, 2, told.join("\n"));
      ok(told[0]!.includes("could not save"), told[0]);
      ok(told[1]!.includes("saved where it starts"), told[1]);
    } finally {
      await shipper.close();
    }
  },
});

Deno.test({
  name:
    "a sink whose start failed in the store ships, once retried, the rows written meanwhile (needs PostgreSQL)",
  ignore,
  async fn() {
    await using r = await rig();
    r.add(5); // from long before the sink: not replayed
    await r.check.ensureTable();
    const seen = firstStartSeen(directWriter(r.repo), true);
    const shipper = r.shipper("postgresql", seen.wrapped);
    try {
      await seen.first;
      const now = systemClock.now();
      const meanwhile = Array.from({ length: 30 }, () => record({ time: now }));
      r.repo.insertBatch(meanwhile.map(toRow));
      seen.letRetry();
      await waitFor(() => stats(shipper).cursor === 35, "the cursor past the 30 rows");
      assertEquals(stats(shipper).shipped_rows, 30);
      assertEquals(await r.check.count(), 30);
      assertEquals(r.repo.cursor("postgresql"), 35);
    } finally {
      await shipper.close();
    }
  },
});

Deno.test({
  name:
    "a sink whose start failed does not re-ship the history when old rows are dated in the future (a clock once set ahead) (needs PostgreSQL)",
  ignore,
  async fn() {
    await using r = await rig();
    // Written long ago while the host's clock was a day ahead: their time is after the sink's
    // creation, their ids before it.
    const ahead = systemClock.now() + 86_400_000;
    r.repo.insertBatch(Array.from({ length: 5 }, () => toRow(record({ time: ahead }))));
    r.add(5);
    await r.check.ensureTable();
    const seen = firstStartSeen(directWriter(r.repo), true);
    const shipper = r.shipper("postgresql", seen.wrapped);
    try {
      await seen.first;
      const now = systemClock.now();
      r.repo.insertBatch(Array.from({ length: 30 }, () => toRow(record({ time: now }))));
      seen.letRetry();
      await waitFor(() => stats(shipper).cursor === 40, "the cursor past the 30 rows");
      assertEquals(stats(shipper).shipped_rows, 30);
      assertEquals(await r.check.count(), 30);
    } finally {
      await shipper.close();
    }
  },
});

Deno.test("a DSN the driver cannot parse never shows its password: not in the sink's error, not in the log", async () => {
  const bad = "postgres://waf:S3cretPw@127.0.0.1:notaport/test";
  // The sink opens, and its first use fails with the DSN masked.
  const sink = createPgSink({ dsn: bad, poolSize: 1, connectTimeoutSeconds: 1 });
  const err = await sink.version().then(() => undefined, (e) => e as Error);
  ok(err !== undefined, "the unparsable DSN fails");
  ok(!err.message.includes("S3cretPw") && /invalid/i.test(err.message), err.message);
  ok(err.message.includes("127.0.0.1:notaport"), err.message);
  await sink.close().catch(() => {});
  // A password with a space (no URL's userinfo) is masked with the rest.
  const spaced = createPgSink({ dsn: "postgres://waf:S3cret Pw@[::1/test", poolSize: 1 });
  const err2 = await spaced.version().then(() => undefined, (e) => e as Error);
  ok(err2 !== undefined && !err2.message.includes("S3cret"), err2?.message);
  await spaced.close().catch(() => {});
  // A server configured with it ships nothing and says why, without the password.
  await using up = startUpstream();
  await using s = await startTestServer({ config: { storage: { postgresql: { dsn: bad } } } });
  s.dataPlane.sites.create(siteInput({ hosts: ["127.0.0.1"], upstreams: [up.url] }), SYSTEM);
  await (await fetch(`${s.dataUrl}/`)).body?.cancel();
  await s.dataPlane.accessLog.flush();
  const stats = () => s.dataPlane.accessLog.stats().sinks[0] as unknown as PgShipperStats;
  await waitFor(() => stats().last_error !== null, "the sink's error");
  ok(!stats().last_error!.includes("S3cretPw"), stats().last_error!);
  ok(s.logs.every((l) => !l.includes("S3cretPw")), s.logs.join("\n"));
});
