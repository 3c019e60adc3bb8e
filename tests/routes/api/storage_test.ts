/**
 * `/api/storage` on the composed app: the status (store files, tables with rows and oldest
 * record, access log, sink, disk usage by kind) and the Redis connectivity test against the real
 * Redis on 127.0.0.1:6379 (ignored when absent, unless WAF_REQUIRE_SERVICES=1), a
 * refused port, a password the server does not expect, and no endpoint configured. The
 * PostgreSQL sink configured at run time (refusals, a failed test, the real PostgreSQL on
 * 127.0.0.1:5432 shipping and then disabled, the DSN sealed, the stored configuration replacing
 * waf.yaml's after a restart) and the disk clean-up (dry run, then
 * records and files removed; the live log, other files and links kept).
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { adminAndViewer, auditItems, errorCode } from "../../_helpers/api_access.ts";
import { ADMIN, callJson, completeSetup, login } from "../../_helpers/identity.ts";
import { startTestServer, type TestTarget } from "../../_helpers/server.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { record } from "../../_helpers/records.ts";
import {
  hasPostgres,
  hasRedis,
  ignoreWithout,
  missing,
  postgresDsn,
} from "../../_helpers/services.ts";
import postgres from "postgres";
import { waitFor } from "../../_helpers/wait.ts";

const redis = await hasRedis();

type Status = {
  store: { bytes: number; wal_bytes: number };
  disk: { free_bytes: number; total_bytes: number } | null;
  tables: { table: string; rows: number; oldest: string | null }[];
  access_log: { written: number };
  postgresql: unknown;
  redis: { configured: boolean; endpoint?: string; last_test: Record<string, unknown> | null };
  usage: Record<string, { folder: string; bytes: number; files: number }>;
};

Deno.test("GET /api/storage reports the store, tables, disk and usage by kind; read:storage reads it", async () => {
  const { server, admin, viewer } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const run = await callJson(server, "POST", "/api/ops/tasks/store-backup/run", {
    session: admin,
    body: {},
  });
  ok(run.status === 200 || run.status === 202);
  while (server.ops.scheduler.isRunning("store-backup")) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const r = await callJson(server, "GET", "/api/storage", { session: viewer });
  assertEquals(r.status, 200);
  const s = r.body as unknown as Status;
  ok(s.store.bytes > 0);
  ok(s.disk === null || s.disk.free_bytes > 0);
  const audit = s.tables.find((t) => t.table === "audit_log")!;
  ok(audit.rows > 0 && audit.oldest !== null, JSON.stringify(audit));
  ok(s.tables.some((t) => t.table === "access_logs"));
  assertEquals(s.usage.backups!.files, 1);
  ok(s.usage.backups!.bytes > 0);
  assertEquals(s.usage.backups!.folder, `${server.dir}/backups`);
  assertEquals(s.postgresql, null);
  assertEquals(s.redis, { configured: false, last_test: null });
  const test = await callJson(server, "POST", "/api/storage/redis/test", {
    session: viewer,
    body: {},
  });
  assertEquals([test.status, errorCode(test)], [403, "FORBIDDEN"]);
  const none = await callJson(server, "POST", "/api/storage/redis/test", {
    session: admin,
    body: {},
  });
  assertEquals([none.status, errorCode(none)], [409, "REDIS_NOT_CONFIGURED"]);
});

Deno.test({
  name:
    "POST /api/storage/redis/test PINGs the real Redis and reports latency and version, audited (needs Redis)",
  ignore: ignoreWithout(redis),
  async fn() {
    if (!redis) throw missing("Redis is not reachable on 127.0.0.1:6379");
    const { server, admin } = await adminAndViewer({
      storage: { redis: { url: "redis://127.0.0.1:6379" } },
    }, ["ops"]);
    await using _ = server;
    const r = await callJson(server, "POST", "/api/storage/redis/test", {
      session: admin,
      body: {},
    });
    assertEquals(r.status, 200);
    assertEquals([r.body.ok, r.body.error, r.body.tls], [true, null, false]);
    assertMatch(String(r.body.version), /^\d+\.\d+/);
    ok(typeof r.body.latency_ms === "number");
    const s = (await callJson(server, "GET", "/api/storage", { session: admin }))
      .body as unknown as Status;
    assertEquals(s.redis.configured, true);
    assertEquals(s.redis.last_test?.ok, true);
    const audit = await auditItems(server, admin, "action=storage.redis.test");
    assertEquals(audit.map((a) => a.result), ["success"]);
  },
});

Deno.test({
  name:
    "the Redis test reports the exact error: a password Redis does not expect (masked) (needs Redis)",
  ignore: ignoreWithout(redis),
  async fn() {
    if (!redis) throw missing("Redis is not reachable on 127.0.0.1:6379");
    const { server, admin } = await adminAndViewer({
      storage: { redis: { url: "redis://:Sekrit-Pass@127.0.0.1:6379" } },
    }, ["ops"]);
    await using _ = server;
    const r = await callJson(server, "POST", "/api/storage/redis/test", {
      session: admin,
      body: {},
    });
    assertEquals(r.status, 200);
    if (r.body.ok === true) return; // a Redis with this password configured: nothing to refuse
    assertMatch(String(r.body.error), /AUTH|password/i);
    assertEquals(r.body.endpoint, "redis://:***@127.0.0.1:6379");
    ok(!JSON.stringify(r.body).includes("Sekrit-Pass"));
    const audit = await auditItems(server, admin, "action=storage.redis.test");
    assertEquals(audit[0]!.result, "failure");
    ok(!JSON.stringify(audit).includes("Sekrit-Pass"));
  },
});

Deno.test("the Redis test reports a refused connection", async () => {
  const { server, admin } = await adminAndViewer({
    storage: { redis: { url: "redis://127.0.0.1:9" } },
  }, ["ops"]);
  await using _ = server;
  const r = await callJson(server, "POST", "/api/storage/redis/test", {
    session: admin,
    body: {},
  });
  assertEquals(r.status, 200);
  assertEquals(r.body.ok, false);
  assertMatch(String(r.body.error), /refused/i);
  assertEquals(r.body.latency_ms, null);
});

const pg = await hasPostgres();
const pgDsn = () => postgresDsn(pg);
const DAY = 86_400_000;

type SinkView = { source: string; enabled: boolean; dsn: string | null; batch_size: number };

/**
 * Pushes one record per id into `server`'s access log, waits until the sink shipped them, and
 * answers how many PostgreSQL holds (then deletes them: the table is shared).
 */
async function shipThrough(
  server: Pick<TestTarget, "api" | "dir" | "clock" | "dataPlane">,
  ids: string[],
): Promise<number> {
  const status = async () => (await callJson(server, "GET", "/api/storage", { session })).body;
  const session = await login(server, ADMIN.username, ADMIN.password);
  await waitFor(async () => (await status()).postgresql !== null, "the sink to start");
  for (const trace_id of ids) {
    server.dataPlane.accessLog.push(record({ trace_id, time: server.clock.now() }));
  }
  await server.dataPlane.accessLog.flush();
  await waitFor(
    async () =>
      ((await status()).postgresql as { shipped_rows: number }).shipped_rows >= ids.length,
    `${ids.length} records shipped`,
  );
  const sql = postgres(pgDsn(), { max: 1, onnotice: () => {} });
  try {
    const rows = await sql`SELECT trace_id FROM waf_access_logs WHERE trace_id IN ${sql(ids)}`;
    await sql`DELETE FROM waf_access_logs WHERE trace_id IN ${sql(ids)}`;
    return rows.length;
  } finally {
    await sql.end();
  }
}

const traceIds = (n: number) =>
  Array.from({ length: n }, () => crypto.randomUUID().replaceAll("-", ""));

Deno.test("PUT /api/storage/sink refuses a viewer, a bad DSN, enabling without one and a failed test", async () => {
  const { server, admin, viewer } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const put = (session: typeof admin, body: unknown) =>
    callJson(server, "PUT", "/api/storage/sink", { session, body });
  assertEquals(errorCode(await put(viewer, { enabled: false })), "FORBIDDEN");
  const bad = await put(admin, { dsn: "mysql://db/x" });
  assertEquals([bad.status, errorCode(bad)], [400, "BAD_REQUEST"]);
  ok(JSON.stringify(bad.body).includes("dsn"), JSON.stringify(bad.body));
  const none = await put(admin, { enabled: true });
  assertEquals([none.status, errorCode(none)], [400, "BAD_REQUEST"]);
  assertMatch(String((none.body.error as { message: string }).message), /"dsn"/);
  // Port 9 refuses: the test fails, the password never shows, nothing changes.
  const refused = await put(admin, {
    enabled: true,
    dsn: "postgres://waf:Sekrit-Pw@127.0.0.1:9/waf",
    connect_timeout_ms: 1000,
  });
  assertEquals([refused.status, errorCode(refused)], [422, "SINK_TEST_FAILED"]);
  assertMatch(String((refused.body.error as { message: string }).message), /refused|ECONNREFUSED/i);
  ok(!JSON.stringify(refused.body).includes("Sekrit-Pw"));
  const s = (await callJson(server, "GET", "/api/storage", { session: viewer })).body;
  assertEquals((s.sink as SinkView).source, "none");
  const audit = await auditItems(server, admin, "action=storage.sink.update");
  assertEquals(audit.map((a) => [a.result, a.detail.code]), [
    ["failure", "SINK_TEST_FAILED"],
    ["failure", "BAD_REQUEST"],
    ["failure", "BAD_REQUEST"],
  ]);
  ok(!JSON.stringify(audit).includes("Sekrit-Pw"));
  // A configuration can be stored disabled without a test (PostgreSQL not there yet).
  const stored = await put(admin, { enabled: false, dsn: "postgres://waf:Sekrit-Pw@db:5432/waf" });
  assertEquals(stored.status, 200);
  assertEquals(stored.body.sink, {
    source: "api",
    enabled: false,
    dsn: "postgres://waf:***@db:5432/waf",
    pool_size: 4,
    batch_size: 500,
    connect_timeout_ms: 5000,
    insert_timeout_ms: 10000,
  });
  const row = server.db.prepare("SELECT value FROM settings WHERE key = 'storage.pg_sink'")
    .get() as { value: string };
  ok(!row.value.includes("Sekrit-Pw"), "the DSN is sealed at rest");
  const reset = await put(admin, { reset: true, enabled: true });
  assertEquals(reset.status, 400);
  assertEquals((await put(admin, { reset: true })).body.sink, {
    source: "none",
    enabled: false,
    dsn: null,
    pool_size: 4,
    batch_size: 500,
    connect_timeout_ms: 5000,
    insert_timeout_ms: 10000,
  });
});

Deno.test({
  name:
    "PUT /api/storage/sink tests, enables and disables the real PostgreSQL sink at run time; the DSN stays sealed (needs PostgreSQL)",
  ignore: ignoreWithout(pg),
  async fn() {
    const { server, admin } = await adminAndViewer({}, ["ops"]);
    await using _ = server;
    const dsn = pgDsn().replace("postgres@", "postgres:Sekrit-Pw@");
    const on = await callJson(server, "PUT", "/api/storage/sink", {
      session: admin,
      body: { enabled: true, dsn, batch_size: 10 },
    });
    assertEquals(on.status, 200, JSON.stringify(on.body));
    const test = on.body.test as { ok: boolean; version: string };
    assertEquals(test.ok, true);
    assertMatch(test.version, /PostgreSQL/);
    assertEquals((on.body.sink as SinkView).dsn, "postgres://postgres:***@127.0.0.1:5432/test");
    ok(!JSON.stringify(on.body).includes("Sekrit-Pw"));
    const status = async () =>
      (await callJson(server, "GET", "/api/storage", { session: admin })).body;
    assertEquals(await shipThrough(server, traceIds(3)), 3);
    const off = await callJson(server, "PUT", "/api/storage/sink", {
      session: admin,
      body: { enabled: false },
    });
    assertEquals([off.status, off.body.test], [200, null]);
    const after = await status();
    assertEquals(after.postgresql, null);
    assertEquals((after.sink as SinkView).enabled, false);
    assertEquals((after.sink as SinkView).batch_size, 10);
    const audit = await auditItems(server, admin, "action=storage.sink.update");
    assertEquals(audit.map((a) => [a.result, a.detail.enabled]), [
      ["success", false],
      ["success", true],
    ]);
    ok(!JSON.stringify(audit).includes("Sekrit-Pw"));
  },
});

Deno.test("POST /api/storage/cleanup reports with dry_run, then removes old records and files, audited", async () => {
  const { server, admin, viewer } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const now = server.clock.now();
  const old = new Date(now - 40 * DAY);
  const file = async (path: string, bytes: number, mtime: Date) => {
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    await Deno.writeFile(path, new Uint8Array(bytes));
    await Deno.utime(path, mtime, mtime);
  };
  const d = server.dir;
  await file(`${d}/logs/waf.log.3`, 1000, old);
  await file(`${d}/logs/waf.log.1`, 500, new Date(now));
  await file(`${d}/logs/waf.log`, 300, old); // the live log is never removed
  await file(`${d}/support/case-1.zip`, 2000, old);
  await file(`${d}/support/notes.txt`, 10, old); // not a pack
  await file(`${d}/backups/waf-20200101-020000.db`, 4000, old);
  await file(`${d}/backups/waf-20260101-020000.db`, 4000, new Date(now));
  await Deno.symlink(`${d}/backups/waf-20260101-020000.db`, `${d}/support/link.zip`);
  for (let i = 0; i < 5; i++) {
    server.dataPlane.accessLog.push(record({ time: now - 50 * DAY + i }));
  }
  server.dataPlane.accessLog.push(record({ time: now }));
  await server.dataPlane.accessLog.flush();

  const clean = (session: typeof admin, body: unknown) =>
    callJson(server, "POST", "/api/storage/cleanup", { session, body });
  const body = {
    access_logs_before: new Date(now - 30 * DAY).toISOString().slice(0, 10),
    runtime_logs_older_than_days: 30,
    backups_older_than_days: 30,
    support_packs_older_than_days: 30,
  };
  assertEquals(errorCode(await clean(viewer, { ...body, dry_run: true })), "FORBIDDEN");
  const nothing = await clean(admin, { dry_run: true });
  assertEquals([nothing.status, errorCode(nothing)], [400, "BAD_REQUEST"]);
  const future = await clean(admin, { access_logs_before: "2999-01-01" });
  assertEquals([future.status, errorCode(future)], [400, "BAD_REQUEST"]);

  const dry = await clean(admin, { ...body, dry_run: true });
  assertEquals(dry.status, 200);
  assertEquals(dry.body.dry_run, true);
  assertEquals((dry.body.access_logs as { rows: number }).rows, 5);
  const names = (k: string) =>
    (dry.body[k] as { files: { name: string }[] }).files.map((f) => f.name);
  assertEquals(names("runtime_logs"), ["waf.log.3"]);
  assertEquals(names("support_packs"), ["case-1.zip"]);
  assertEquals(names("backups"), ["waf-20200101-020000.db"]);
  assertEquals(dry.body.freed_bytes, 7000);
  await Deno.stat(`${d}/logs/waf.log.3`); // still there

  const real = await clean(admin, body);
  assertEquals(real.status, 200);
  assertEquals((real.body.access_logs as { rows: number }).rows, 5);
  ok((real.body.freed_bytes as number) >= 7000);
  ok(real.body.reclaim !== null);
  const exists = async (p: string) => await Deno.lstat(p).then(() => true, () => false);
  assertEquals(
    await Promise.all(
      [
        "logs/waf.log.3",
        "logs/waf.log.1",
        "logs/waf.log",
        "support/case-1.zip",
        "support/notes.txt",
        "support/link.zip",
        "backups/waf-20200101-020000.db",
        "backups/waf-20260101-020000.db",
      ].map((p) => exists(`${d}/${p}`)),
    ),
    [false, true, true, false, true, true, false, true],
  );
  const left = await callJson(server, "GET", "/api/logs?limit=100", { session: admin });
  assertEquals((left.body.items as unknown[]).length, 1);
  const audit = await auditItems(server, admin, "action=storage.cleanup");
  assertEquals(audit.map((a) => [a.result, a.detail.dry_run ?? a.detail.code]), [
    ["success", false],
    ["success", true],
    ["failure", "BAD_REQUEST"],
    ["failure", "BAD_REQUEST"],
  ]);
});

Deno.test({
  name:
    "a sink configured at run time outlives a restart: the sealed DSN is opened at start and replaces waf.yaml's (needs PostgreSQL)",
  ignore: ignoreWithout(pg),
  async fn() {
    await using work = await tempDir();
    // waf.yaml names an endpoint that refuses; the stored configuration wins over it.
    const config = { storage: { postgresql: { dsn: "postgres://waf@127.0.0.1:9/waf" } } };
    {
      await using s = await startTestServer({ dir: String(work), config });
      await completeSetup(s);
      const admin = await login(s, ADMIN.username, ADMIN.password);
      const before = (await callJson(s, "GET", "/api/storage", { session: admin })).body;
      assertEquals((before.sink as SinkView).source, "file");
      const on = await callJson(s, "PUT", "/api/storage/sink", {
        session: admin,
        body: { enabled: true, dsn: pgDsn(), batch_size: 5 },
      });
      assertEquals(on.status, 200, JSON.stringify(on.body));
    }
    await using s = await startTestServer({ dir: String(work), config });
    const admin = await login(s, ADMIN.username, ADMIN.password);
    const status = async () => (await callJson(s, "GET", "/api/storage", { session: admin })).body;
    assertEquals(((await status()).sink as SinkView).source, "api");
    assertEquals(await shipThrough(s, traceIds(1)), 1, "shipped through the stored DSN");
  },
});
