/**
 * The management database's facts: on the store `testStore()` opens (SQLite, or PostgreSQL with
 * `WAF_TEST_STORE=postgresql`) the engine, schema version and a timed `SELECT 1`; the controllers
 * from the coordinator with the tasks they hold, or null when it fails or is late; the DSN shown
 * with its password masked; and on the real PostgreSQL cut off behind a relay: `available: false`
 * with the schema version last read, then available again once the database answers.
 */
import postgres from "postgres";
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { testConfig } from "../../_helpers/server.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../../_helpers/services.ts";
import { testEngine, testSchemaName, testStore } from "../../_helpers/store.ts";
import { startRelayThread } from "../../_helpers/tcp_relay_thread.ts";
import { openPgStore } from "../../../db/pg/pg_database.ts";
import { SCHEMA_VERSION } from "../../../db/migrations.ts";
import type { Db } from "../../../db/store.ts";
import { type Coordinator, createLocalCoordinator } from "../../../mod/deployment/coordinator.ts";
import { createStoreFacts, databaseLocation } from "../../../mod/deployment/store_facts.ts";

const available = await hasPostgres();

/** A stopwatch that moves 1.5 ms between two readings. */
function stopwatch() {
  let t = 100;
  return () => (t += 1.5);
}

function facts(db: Db, coordinator: Coordinator, extra: { controllersTimeoutMs?: number } = {}) {
  return createStoreFacts({
    db,
    profile: "temporary",
    location: { location: "/data/waf.db", schema: null },
    coordinator,
    state: () => "ok",
    elapsed: stopwatch(),
    ...extra,
  });
}

Deno.test("createStoreFacts() reports the engine, schema version and a timed round trip of the store", async () => {
  await using store = await testStore();
  const coordinator = createLocalCoordinator({ controllerId: "c1", now: () => 5_000 });
  await coordinator.start({ name: "box", managementAddress: "https://box:9443" });
  await coordinator.acquire("ops.store-backup");
  const view = await facts(store.db, coordinator).view();
  assertEquals(view.engine, testEngine());
  assertEquals(view.database, {
    location: "/data/waf.db",
    schema: null,
    schema_version: SCHEMA_VERSION,
  });
  assertEquals([view.available, view.state, view.latency_ms], [true, "ok", 1.5]);
  assertEquals(view.controllers?.map((c) => [c.name, c.self, c.tasks]), [
    ["box", true, ["ops.store-backup"]],
  ]);
});

Deno.test("createStoreFacts() reports the controllers as unknown when the coordinator fails or is late", async () => {
  await using store = await testStore();
  const local = createLocalCoordinator({ controllerId: "c1", now: () => 0 });
  const failing: Coordinator = { ...local, controllers: () => Promise.reject(new Error("down")) };
  assertEquals((await facts(store.db, failing).view()).controllers, null);
  let release = () => {};
  const late: Coordinator = {
    ...local,
    controllers: () => new Promise((resolve) => release = () => resolve([])),
  };
  const view = await facts(store.db, late, { controllersTimeoutMs: 10 }).view();
  release();
  assertEquals([view.controllers, view.available], [null, true]);
});

Deno.test("databaseLocation() masks the DSN's password; the temporary profile names the file", () => {
  const production = testConfig({
    storage: {
      profile: "production",
      production: {
        postgresql: { dsn: "postgres://waf:Hunter2-Secret@db.internal:5432/waf", schema: "waf" },
        secrets_file: "/etc/waf/deployment.key",
      },
    },
  });
  const shown = databaseLocation(production, "/var/lib/waf");
  assertEquals(shown, { location: "postgres://waf:***@db.internal:5432/waf", schema: "waf" });
  assertEquals(databaseLocation(testConfig(), "/var/lib/waf"), {
    location: "/var/lib/waf/waf.db",
    schema: null,
  });
});

Deno.test({
  name:
    "createStoreFacts() with the PostgreSQL store cut off: unavailable, no latency, the last schema version (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    const schema = testSchemaName();
    await using relay = await startRelayThread({ hostname: "127.0.0.1", port: 5432 });
    const db = openPgStore({
      dsn: `postgres://postgres@127.0.0.1:${relay.port}/test`,
      schema,
      connectTimeoutMs: 1_000,
      statementTimeoutMs: 2_000,
      controllerId: "c1",
      now: 1_000,
    });
    try {
      const local = createLocalCoordinator({ controllerId: "c1", now: () => 0 });
      const f = createStoreFacts({
        db,
        profile: "production",
        location: { location: "postgres://postgres@127.0.0.1/test", schema },
        coordinator: local,
        state: () => db.unavailable ? "unavailable" : "ok",
      });
      const up = f.database();
      assertEquals([up.engine, up.available, up.database.schema_version], [
        "postgresql",
        true,
        SCHEMA_VERSION,
      ]);
      ok(up.latency_ms !== null && up.latency_ms >= 0, String(up.latency_ms));
      await relay.set("refuse");
      const down = f.database();
      assertEquals(
        [down.available, down.state, down.latency_ms, down.database.schema_version],
        [false, "unavailable", null, SCHEMA_VERSION],
      );
      // Once known to be down it answers at once, without waiting for a connection.
      const started = performance.now();
      assertEquals(f.database().available, false);
      ok(performance.now() - started < 500);
      await relay.set("up");
      const until = Date.now() + 10_000;
      while (db.unavailable && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      assertEquals([f.database().available, f.database().state], [true, "ok"]);
    } finally {
      db.close();
      const sql = postgres(postgresDsn(available), { max: 1, onnotice: () => {} });
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await sql.end();
    }
  },
});
