/**
 * The production coordinator against the real PostgreSQL: two coordinators (two controllers)
 * in one process, on a schema of the test's own, dropped after.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import postgres from "postgres";
import {
  CHANGE_CHANNEL,
  EVENT_CHANNEL,
  FORGET_MS,
  type RelayedEvent,
  STALE_MS,
} from "../../../mod/deployment/coordinator.ts";
import { createPgCoordinator, type PgCoordinator } from "../../../mod/deployment/pg_coordinator.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../../_helpers/services.ts";

const available = await hasPostgres();

/** Two coordinators on a fresh schema with one fake clock; drops the schema after `fn`. */
async function withTwo(
  fn: (
    t: {
      a: PgCoordinator;
      b: PgCoordinator;
      sql: postgres.Sql;
      clock: { now: number };
      schema: string;
    },
  ) => Promise<void>,
  ids: { a?: string; b?: string } = {},
): Promise<void> {
  const dsn = postgresDsn(available);
  const schema = `coord_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const sql = postgres(dsn, { max: 1, onnotice: () => {} });
  await sql.unsafe(`CREATE SCHEMA ${schema}`);
  const clock = { now: 1_000_000 };
  const make = (id: string) =>
    createPgCoordinator({
      dsn,
      controllerId: id,
      connectTimeoutMs: 5000,
      schema,
      now: () => clock.now,
      timers: false,
    });
  const a = make(ids.a ?? "ctrl-a");
  const b = make(ids.b ?? "ctrl-b");
  try {
    await a.start({ name: "a", managementAddress: "https://a:9443" });
    await b.start({ name: "b", managementAddress: "https://b:9443" });
    await fn({ a, b, sql, clock, schema });
  } finally {
    await a.stop().catch(() => {});
    await b.stop().catch(() => {});
    await sql.unsafe(`DROP SCHEMA ${schema} CASCADE`);
    await sql.end();
  }
}

/** Resolves with the next change `c` hears. */
function nextChange(c: PgCoordinator): Promise<readonly string[] | null> {
  return new Promise((resolve) => c.onChange(resolve));
}

Deno.test({
  name: "pg coordinator: a notice from A reaches B, not A itself (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, sql, schema }) => {
      const heardByA: (readonly string[] | null)[] = [];
      a.onChange((t) => heardByA.push(t));
      const heard = nextChange(b);
      // Another deployment's notice (its tables in another schema of the database) is not ours.
      await sql`SELECT pg_notify(${CHANGE_CHANNEL}, ${
        JSON.stringify({ controller: "ctrl-x", schema: `${schema}_other`, tables: ["users"] })
      })`;
      // What the PostgreSQL store sends after A's commit.
      const payload = JSON.stringify({
        controller: "ctrl-a",
        schema,
        tables: ["sites", "ip_lists"],
      });
      await sql`SELECT pg_notify(${CHANGE_CHANNEL}, ${payload})`;
      assertEquals(await heard, ["sites", "ip_lists"]);
      // B's own notice comes back to B's feed too; A hears it, proving A listens and that
      // its own earlier notice was skipped, not lost.
      const heardA = nextChange(a);
      await sql`SELECT pg_notify(${CHANGE_CHANNEL}, ${
        JSON.stringify({ controller: "ctrl-b", schema, tables: ["settings"] })
      })`;
      assertEquals(await heardA, ["settings"]);
      assertEquals(heardByA, [["settings"]]);
    });
  },
});

Deno.test({
  name:
    "pg coordinator: a lost LISTEN connection reconnects and asks for a full refresh (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    // B's id is this test's own: the connections it ends must not be another test's (tests
    // run in parallel on one database, and other files name their controllers ctrl-b too).
    const id = `ctrl-b-${crypto.randomUUID().slice(0, 8)}`;
    await withTwo(async ({ b, sql, schema }) => {
      const refresh = nextChange(b);
      // Ends B's connections (the LISTEN one among them), as a database restart would.
      await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = ${"waf-coordinator " + id}`;
      assertEquals(await refresh, null);
      // And the feed works again after the reconnection.
      const again = nextChange(b);
      await sql`SELECT pg_notify(${CHANGE_CHANNEL}, ${
        JSON.stringify({ controller: "ctrl-a", schema, tables: ["users"] })
      })`;
      assertEquals(await again, ["users"]);
    }, { b: id });
  },
});

Deno.test({
  name:
    "pg coordinator: a lease is held by one controller and taken over when it stops renewing (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      assertEquals(await a.acquire("backup"), true);
      assertEquals(await b.acquire("backup"), false);
      assertEquals(await a.acquire("backup"), true);
      // A keeps renewing: B still cannot take it after more than one lease time.
      clock.now += STALE_MS - 1;
      await a.heartbeat();
      clock.now += STALE_MS - 1;
      assertEquals(await b.acquire("backup"), false);
      // A dies (no more heartbeats): after the lease time B takes it, and A has lost it.
      clock.now += STALE_MS;
      assertEquals(await b.acquire("backup"), true);
      assertEquals(await a.acquire("backup"), false);
      // Two controllers racing for a fresh task: exactly one wins.
      const wins = await Promise.all([a.acquire("cleanup"), b.acquire("cleanup")]);
      assertEquals(wins.filter(Boolean).length, 1);
    });
  },
});

Deno.test({
  name:
    "pg coordinator: the registry lists both controllers, their leases and who is alive (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      await a.acquire("backup");
      await b.acquire("token_cleanup");
      const seen = await a.controllers();
      assertEquals(seen.map((c) => [c.id, c.name, c.alive, c.self, c.tasks]), [
        ["ctrl-a", "a", true, true, ["backup"]],
        ["ctrl-b", "b", true, false, ["token_cleanup"]],
      ]);
      assertEquals(seen[0]!.management_address, "https://a:9443");
      ok(seen[0]!.version.length > 0);
      // B stops heartbeating: stale after STALE_MS, and its lease no longer shown.
      clock.now += STALE_MS;
      await a.heartbeat();
      const later = await b.controllers();
      assertEquals(later.map((c) => [c.id, c.alive, c.self, c.tasks]), [
        ["ctrl-a", true, false, ["backup"]],
        ["ctrl-b", false, true, []],
      ]);
      // Stopping gives up the leases at once.
      await a.stop();
      assertEquals(await b.acquire("backup"), true);
    });
  },
});

Deno.test({
  name:
    "pg coordinator: a controller not seen for a day leaves the registry at the next heartbeat (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      // B is gone (a restart registers a new id); A keeps beating.
      clock.now += FORGET_MS - 1;
      await a.heartbeat();
      assertEquals((await a.controllers()).map((c) => [c.id, c.alive]), [
        ["ctrl-a", true],
        ["ctrl-b", false],
      ]);
      clock.now += 1;
      await a.heartbeat();
      assertEquals((await a.controllers()).map((c) => c.id), ["ctrl-a"]);
      // A controller that comes back registers again.
      await b.heartbeat();
      assertEquals((await a.controllers()).map((c) => [c.id, c.alive]), [
        ["ctrl-a", true],
        ["ctrl-b", true],
      ]);
    });
  },
});

Deno.test({
  name:
    "pg coordinator: notices and relayed events of another schema (another deployment on the database) are ignored (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, sql, schema }) => {
      const changes: (readonly string[] | null)[] = [];
      b.onChange((t) => changes.push(t));
      const relayed: RelayedEvent[] = [];
      const heard = new Promise<void>((resolve) =>
        b.onRelay((e) => {
          relayed.push(e);
          resolve();
        })
      );
      const mine: RelayedEvent[] = [];
      a.onRelay((e) => mine.push(e));
      await sql`SELECT pg_notify(${CHANGE_CHANNEL}, ${
        JSON.stringify({ controller: "ctrl-x", schema: "elsewhere", tables: ["sites"] })
      })`;
      await sql`SELECT pg_notify(${EVENT_CHANNEL}, ${
        JSON.stringify({
          controller: "ctrl-x",
          schema: "elsewhere",
          kind: "config.changed",
          time: 1,
          site: null,
          data: "{}",
        })
      })`;
      const next = nextChange(b);
      await sql`SELECT pg_notify(${CHANGE_CHANNEL}, ${
        JSON.stringify({ controller: "ctrl-a", schema, tables: ["users"] })
      })`;
      assertEquals(await next, ["users"]);
      assertEquals(changes, [["users"]]);
      // A relays one event: B hears it (and not the other schema's), A does not hear itself.
      a.relay({
        kind: "config.changed",
        time: 2,
        site: { id: "s1", name: "shop" },
        data: '{"n":1}',
      });
      await heard;
      assertEquals(relayed, [{
        kind: "config.changed",
        time: 2,
        site: { id: "s1", name: "shop" },
        data: '{"n":1}',
      }]);
      assertEquals(mine, []);
    });
  },
});
