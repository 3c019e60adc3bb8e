/**
 * `GET /api/system/storage` and the management database in `GET /api/storage`, in-process: on the
 * temporary profile (the SQLite file, this one controller); on the production profile against the
 * real PostgreSQL (the DSN shown masked, the local file being the access log only); and the route
 * itself with the database cut off behind a relay: 200 with `available: false`, never a 503.
 */
import { Hono } from "hono";
import postgres from "postgres";
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { adminAndViewer, errorCode } from "../../_helpers/api_access.ts";
import { ADMIN, callJson, completeSetup, login } from "../../_helpers/identity.ts";
import { createTestApp } from "../../_helpers/server.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../../_helpers/services.ts";
import { testSchemaName } from "../../_helpers/store.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { startRelayThread } from "../../_helpers/tcp_relay_thread.ts";
import { openPgStore } from "../../../db/pg/pg_database.ts";
import { SCHEMA_VERSION } from "../../../db/migrations.ts";
import type { ControllerView, Coordinator } from "../../../mod/deployment/coordinator.ts";
import { createStoreFacts } from "../../../mod/deployment/store_facts.ts";
import type { Env } from "../../../routes/api/env.ts";
import { systemStorageRoutes } from "../../../routes/api/system_storage.ts";

const available = await hasPostgres();
const PASSWORD = "Sekrit-Db-Pw-77";

type View = {
  profile: string;
  engine: string;
  database: { location: string; schema: string | null; schema_version: number | null };
  available: boolean;
  state: string;
  latency_ms: number | null;
  controllers: ControllerView[] | null;
};

async function dropSchema(schema: string): Promise<void> {
  const sql = postgres(postgresDsn(available), { max: 1, onnotice: () => {} });
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await sql.end();
}

Deno.test("GET /api/system/storage reports the SQLite store and this controller on the temporary profile; it needs read:system", async () => {
  const { server, viewer } = await adminAndViewer({}, ["apiAccess"]);
  await using _ = server;
  const r = await callJson(server, "GET", "/api/system/storage", { session: viewer });
  assertEquals(r.status, 200);
  const v = r.body as unknown as View;
  assertEquals([v.profile, v.engine, v.available, v.state], ["temporary", "sqlite", true, "ok"]);
  assertEquals(v.database, {
    location: `${server.dir}/waf.db`,
    schema: null,
    schema_version: SCHEMA_VERSION,
  });
  ok(typeof v.latency_ms === "number" && v.latency_ms >= 0, String(v.latency_ms));
  assertEquals(v.controllers?.map((c) => [c.self, c.alive]), [[true, true]]);
  const anonymous = await callJson(server, "GET", "/api/system/storage");
  assertEquals([anonymous.status, errorCode(anonymous)], [401, "UNAUTHORIZED"]);
});

Deno.test("GET /api/storage names the management database next to the local file on the temporary profile", async () => {
  const { server, viewer } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const r = await callJson(server, "GET", "/api/storage", { session: viewer });
  assertEquals(r.status, 200);
  const management = r.body.management as View;
  assertEquals([management.engine, management.available], ["sqlite", true]);
  const store = r.body.store as { contents: string; path: string; bytes: number };
  assertEquals([store.contents, store.path], ["management", `${server.dir}/waf.db`]);
  ok(store.bytes > 0);
});

Deno.test({
  name:
    "on the production profile both answers name the PostgreSQL store with its password masked (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    const schema = testSchemaName();
    await using keys = await tempDir();
    const dsn = postgresDsn(available).replace("postgres@", `postgres:${PASSWORD}@`);
    try {
      await using server = await createTestApp({
        areas: ["ops"],
        config: {
          storage: {
            profile: "production",
            production: {
              postgresql: { dsn, schema },
              secrets_file: `${keys}/deployment.key`,
            },
          },
        },
      });
      await completeSetup(server);
      const admin = await login(server, ADMIN.username, ADMIN.password);
      const r = await callJson(server, "GET", "/api/system/storage", { session: admin });
      assertEquals(r.status, 200);
      ok(!JSON.stringify(r.body).includes(PASSWORD));
      const v = r.body as unknown as View;
      assertEquals([v.profile, v.engine, v.available, v.state], [
        "production",
        "postgresql",
        true,
        "ok",
      ]);
      assertMatch(v.database.location, /^postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:5432\/test$/);
      assertEquals([v.database.schema, v.database.schema_version], [schema, SCHEMA_VERSION]);
      ok(typeof v.latency_ms === "number");
      const self = v.controllers?.find((c) => c.self);
      ok(self && self.alive && Array.isArray(self.tasks), JSON.stringify(v.controllers));

      const s = await callJson(server, "GET", "/api/storage", { session: admin });
      assertEquals(s.status, 200);
      ok(!JSON.stringify(s.body).includes(PASSWORD));
      assertEquals((s.body.management as View).database.location, v.database.location);
      const store = s.body.store as { contents: string; path: string };
      assertEquals([store.contents, store.path], ["access_log", `${server.dir}/access_log.db`]);
      const tables = (s.body.tables as { table: string }[]).map((t) => t.table);
      assertEquals(tables, ["access_logs"], "the local file holds the access log only");
    } finally {
      await dropSchema(schema);
    }
  },
});

Deno.test({
  name:
    "GET /api/system/storage with the database cut off answers 200, available false, no password (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    const schema = testSchemaName();
    await using relay = await startRelayThread({ hostname: "127.0.0.1", port: 5432 });
    const db = openPgStore({
      dsn: `postgres://postgres:${PASSWORD}@127.0.0.1:${relay.port}/test`,
      schema,
      connectTimeoutMs: 1_000,
      statementTimeoutMs: 2_000,
      controllerId: "c1",
      now: 1_000,
    });
    try {
      const coordinator = {
        profile: "production",
        controllers: () => Promise.reject(new Error("connection refused")),
      } as unknown as Coordinator;
      const facts = createStoreFacts({
        db,
        profile: "production",
        location: { location: `postgres://postgres:***@127.0.0.1:${relay.port}/test`, schema },
        coordinator,
        state: () => db.unavailable ? "unavailable" : "ok",
      });
      const app = new Hono<Env>();
      for (const route of systemStorageRoutes(facts)) app.get(route.path, route.handler);
      await relay.set("refuse");
      const res = await app.request("/api/system/storage");
      assertEquals(res.status, 200);
      const text = await res.text();
      ok(!text.includes(PASSWORD), text);
      const v = JSON.parse(text) as View;
      assertEquals(
        [v.available, v.state, v.latency_ms, v.controllers, v.database.schema_version],
        [false, "unavailable", null, null, SCHEMA_VERSION],
      );
    } finally {
      db.close();
      await dropSchema(schema);
    }
  },
});
