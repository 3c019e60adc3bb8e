/**
 * `/api/storage` on the composed app: the status (store files, tables with rows and oldest
 * record, access log, sink, disk usage by kind) and the Redis connectivity test against the real
 * Redis on 127.0.0.1:6379 (skipped with a message when absent, unless WAF_REQUIRE_SERVICES=1), a
 * refused port, a password the server does not expect, and no endpoint configured.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { adminAndViewer, auditItems, errorCode } from "../../_helpers/api_access.ts";
import { callJson } from "../../_helpers/identity.ts";
import { REQUIRE_SERVICES } from "../../_helpers/services.ts";

async function redisReachable(): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port: 6379 })).close();
    return true;
  } catch {
    if (REQUIRE_SERVICES) throw new Error("Redis is not reachable on 127.0.0.1:6379");
    console.warn("skipped: Redis is not reachable on 127.0.0.1:6379");
    return false;
  }
}
const redis = await redisReachable();

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
  const { server, admin, viewer } = await adminAndViewer();
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
    "POST /api/storage/redis/test PINGs the real Redis and reports latency and version, audited",
  ignore: !redis,
  async fn() {
    const { server, admin } = await adminAndViewer({
      storage: { redis: { url: "redis://127.0.0.1:6379" } },
    });
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
  name: "the Redis test reports the exact error: a password Redis does not expect (masked)",
  ignore: !redis,
  async fn() {
    const { server, admin } = await adminAndViewer({
      storage: { redis: { url: "redis://:Sekrit-Pass@127.0.0.1:6379" } },
    });
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
  });
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
