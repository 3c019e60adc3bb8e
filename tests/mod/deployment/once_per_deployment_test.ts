/**
 * Two controllers of one deployment in one process, on the real PostgreSQL: each with its own
 * store connection and coordinator on a schema of the test's own (dropped after), one fake
 * clock. A scheduled task's due time runs once (and a controller's own task on each), a lease
 * is taken over once its holder stops renewing, a notification delivery reaches a loopback
 * webhook once, the dashboard's rollups add both controllers' traffic, an attack spike spread
 * over both is notified once, and a deployment-wide realtime event reaches both feeds once.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import postgres from "postgres";
import { openPgStore, type PgDatabase } from "../../../db/pg/pg_database.ts";
import type { Db } from "../../../db/store.ts";
import { transaction } from "../../../db/store.ts";
import { createOpsTasksRepo } from "../../../db/ops_tasks_repo.ts";
import { createNotifyRepo } from "../../../db/notify_repo.ts";
import { createMonitorRepo } from "../../../db/monitor_repo.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import type { NewNotification } from "../../../mod/core/notifications.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createSecretBox } from "../../../mod/core/secret_box.ts";
import { SiteCounterSet } from "../../../mod/data_plane/site_counters.ts";
import { STALE_MS } from "../../../mod/deployment/coordinator.ts";
import { createPgCoordinator, type PgCoordinator } from "../../../mod/deployment/pg_coordinator.ts";
import { createAttackSpike, SPIKE_GRACE_MS } from "../../../mod/monitor/attack_spike.ts";
import { ALL, MINUTE_MS, totals } from "../../../mod/monitor/rollup_cells.ts";
import { createRollups } from "../../../mod/monitor/rollups.ts";
import { createEventBus } from "../../../mod/monitor/event_bus.ts";
import { relayRealtime } from "../../../mod/deployment/realtime_relay.ts";
import { createChannels } from "../../../mod/notify/channels.ts";
import { createDispatcher } from "../../../mod/notify/dispatcher.ts";
import { createScheduler } from "../../../mod/ops/scheduler.ts";
import type { TaskDef } from "../../../mod/ops/task.ts";
import { record } from "../../_helpers/records.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../../_helpers/services.ts";
import { testSchemaName } from "../../_helpers/store.ts";
import { waitFor } from "../../_helpers/wait.ts";

const available = await hasPostgres();
const MIN = 60_000;
const START = Date.UTC(2026, 0, 1, 0, 0, 0);

interface Controller {
  readonly name: string;
  readonly db: Db;
  readonly tx: <T>(fn: () => T) => T;
  readonly coordinator: PgCoordinator;
}

/** Two controllers on a fresh schema, one fake clock; drops the schema after `fn`. */
async function withTwo(
  fn: (t: { a: Controller; b: Controller; clock: FakeClock }) => Promise<void>,
): Promise<void> {
  const dsn = postgresDsn(available);
  const schema = testSchemaName();
  const clock = new FakeClock(START);
  const stores: PgDatabase[] = [];
  const coordinators: PgCoordinator[] = [];
  const make = async (name: string): Promise<Controller> => {
    const controllerId = `ctrl-${name}`;
    const db = openPgStore({
      dsn,
      schema,
      connectTimeoutMs: 5_000,
      statementTimeoutMs: 10_000,
      controllerId,
      now: clock.now(),
    });
    stores.push(db);
    const coordinator = createPgCoordinator({
      dsn,
      controllerId,
      connectTimeoutMs: 5_000,
      schema,
      now: () => clock.now(),
      timers: false,
    });
    coordinators.push(coordinator);
    await coordinator.start({ name, managementAddress: `https://${name}:9443` });
    const sqlite = db as unknown as Db;
    return { name, db: sqlite, tx: (f) => transaction(sqlite, f), coordinator };
  };
  try {
    const a = await make("a");
    const b = await make("b");
    await fn({ a, b, clock });
  } finally {
    for (const c of coordinators) await c.stop().catch(() => {});
    for (const s of stores) s.close();
    const sql = postgres(dsn, { max: 1, onnotice: () => {} });
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  }
}

Deno.test({
  name:
    "two controllers: a deployment task's due time runs once, a controller's own task on each, and a stale lease is taken over (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      const ran: string[] = [];
      const tasks = (who: string): TaskDef<never>[] => [
        {
          id: "backup",
          title: "Backup",
          description: "",
          schedule: { every_ms: 10 * MIN },
          run: () => void ran.push(`backup@${who}`),
        },
        {
          id: "clock",
          title: "Clock",
          description: "",
          schedule: { every_ms: 10 * MIN },
          scope: "controller",
          run: () => void ran.push(`clock@${who}`),
        },
      ];
      const make = (c: Controller) =>
        createScheduler({
          repo: createOpsTasksRepo(c.db),
          clock,
          random: systemRandom,
          logger: createMemoryLogger(),
          transaction: c.tx,
          lease: (task) => c.coordinator.acquire(`ops.${task}`),
        }, tasks(c.name));
      const sa = make(a);
      const sb = make(b);

      clock.advance(10 * MIN);
      await Promise.all([sa.tick(), sb.tick()]);
      assertEquals(ran.filter((r) => r.startsWith("backup")).length, 1);
      assertEquals(ran.filter((r) => r.startsWith("clock")).sort(), ["clock@a", "clock@b"]);
      const holder = ran.find((r) => r.startsWith("backup"))!.endsWith("@a") ? a : b;
      const other = holder === a ? b : a;
      const [sHolder, sOther] = holder === a ? [sa, sb] : [sb, sa];

      // The holder keeps renewing: the next due time runs on it again, once.
      ran.length = 0;
      clock.advance(10 * MIN);
      await holder.coordinator.heartbeat();
      await sOther.tick();
      await sHolder.tick();
      assertEquals(
        ran.sort(),
        [
          `backup@${holder.name}`,
          `clock@${holder.name}`,
          `clock@${other.name}`,
        ].sort(),
      );

      // The holder dies (no more heartbeats): within the lease time the other still waits...
      ran.length = 0;
      clock.advance(10 * MIN);
      await holder.coordinator.heartbeat();
      clock.advance(STALE_MS - 1_000);
      await sOther.tick();
      assertEquals(ran, [`clock@${other.name}`]);
      // ... and once the lease is stale it takes it over and runs the due time, once.
      clock.advance(MIN);
      await sOther.tick();
      await sOther.tick();
      assertEquals(ran, [`clock@${other.name}`, `backup@${other.name}`]);
      assertEquals(
        (await other.coordinator.controllers()).find((c) => c.self)!.tasks,
        ["ops.backup"],
      );
    });
  },
});

Deno.test({
  name:
    "two controllers: a sliding deadline asked for on the controller without the lease runs on the holder (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      const ran: string[] = [];
      let deadline: number | undefined;
      const task = (who: string, dueAt?: () => number | undefined): TaskDef<never> => ({
        id: "cleanup",
        title: "Cleanup",
        description: "",
        schedule: { every_ms: 6 * 60 * MIN },
        dueAt,
        run: () => {
          ran.push(who);
          deadline = undefined;
        },
      });
      const make = (c: Controller, def: TaskDef<never>) =>
        createScheduler({
          repo: createOpsTasksRepo(c.db),
          clock,
          random: systemRandom,
          logger: createMemoryLogger(),
          transaction: c.tx,
          lease: (t) => c.coordinator.acquire(`ops.${t}`),
        }, [def]);
      assertEquals(await a.coordinator.acquire("ops.cleanup"), true);
      const sa = make(a, task("a"));
      // B's own deadline (a token created on B) is in B's memory only.
      const sb = make(b, task("b", () => deadline));
      deadline = clock.now() + 10 * MIN;
      clock.advance(10 * MIN);
      await a.coordinator.heartbeat();
      await sb.tick();
      assertEquals(ran, [], "B does not hold the lease");
      await sa.tick();
      assertEquals(ran, ["a"], "the holder ran B's deadline");
    });
  },
});

/** A loopback webhook receiver counting what it is sent. */
function startReceiver() {
  const received: { event: string; title: string }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    received.push(JSON.parse(await req.text()));
    return Response.json({ ok: true });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    received,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test({
  name: "two controllers: one notification delivery is sent once (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await using receiver = startReceiver();
    await using dir = await tempKeyDir();
    await withTwo(async ({ a, b, clock }) => {
      const make = (c: Controller) => {
        const repo = createNotifyRepo(c.db);
        const channels = createChannels({
          repo,
          box: createSecretBox(dir.key, systemRandom),
          clock,
          random: systemRandom,
        });
        const dispatcher = createDispatcher({
          repo,
          channels,
          clock,
          random: systemRandom,
          logger: createMemoryLogger(),
        });
        return { channels, dispatcher };
      };
      const da = make(a);
      const db = make(b);
      da.dispatcher.start();
      db.dispatcher.start();
      const { row } = await da.channels.prepareCreate({
        name: "ops",
        type: "webhook",
        enabled: true,
        events: ["attack.spike"],
        settings: { url: receiver.url },
      });
      da.channels.insert(row);
      da.dispatcher.offer({
        id: "n1",
        time: new Date(clock.now()).toISOString(),
        level: "warning",
        kind: "attack.spike",
        title: "Spike",
        body: "",
        params: {},
        link: null,
        read: false,
        read_at: null,
      }, {});
      // Both controllers drain the shared deliveries at the same moment.
      await Promise.all([da.dispatcher.runDue(), db.dispatcher.runDue()]);
      await Promise.all([da.dispatcher.runDue(), db.dispatcher.runDue()]);
      const [delivery] = db.dispatcher.deliveries(row.id, { limit: 10 }).items;
      assertEquals(receiver.received.map((r) => r.title), ["Spike"]);
      assertEquals(delivery!.status, "delivered");
      assertEquals(delivery!.attempts.length, 1);
      await da.dispatcher.stop();
      await db.dispatcher.stop();
    });
  },
});

/** A temporary sealing key file, shared by both controllers (the deployment's key). */
async function tempKeyDir() {
  const path = await Deno.makeTempDir({ prefix: "waf-once-" });
  return {
    key: `${path}/sealing.key`,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }),
  };
}

/** `n` blocked and `n` passed requests counted on `counters`. */
function traffic(counters: SiteCounterSet, n: number): void {
  const site = counters.forSite("s1", "shop");
  for (let i = 0; i < n; i++) {
    site.count(record({ action: "block", status: 403 }), 10, null);
    site.count(record(), 10, 5);
  }
}

Deno.test({
  name:
    "two controllers: the rollups add both controllers' traffic, and a spike over both notifies once (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      const notes: (NewNotification & { by: string })[] = [];
      const make = (c: Controller) => {
        const counters = new SiteCounterSet();
        const spike = createAttackSpike({
          notify: (n) => {
            notes.push({ ...n, by: c.name });
            return "id";
          },
          threshold: 10,
          clock,
          logger: createMemoryLogger(),
          lease: () => c.coordinator.acquire("monitor.attack_spike"),
          stored: (bucket) => rollups.stored("minute", bucket, ALL),
        });
        const rollups = createRollups({
          repo: createMonitorRepo(c.db),
          clock,
          counters,
          minuteClosed: spike.closed,
        });
        return { counters, rollups, spike };
      };
      const ra = make(a);
      const rb = make(b);
      const minute = Math.floor(clock.now() / MINUTE_MS) * MINUTE_MS;
      // Each controller blocks 6 in the minute (threshold 10): only their sum is a spike.
      traffic(ra.counters, 6);
      traffic(rb.counters, 6);
      ra.rollups.persist();
      rb.rollups.persist();
      traffic(ra.counters, 1);
      ra.rollups.persist();
      const stored = ra.rollups.cells("minute", minute, minute + MINUTE_MS);
      const all = stored.find((c) => c.site === ALL)!;
      assertEquals(totals([all.cell]).requests, 26);
      assertEquals(totals([all.cell]).by_action.block, 13);
      assertEquals(totals(stored.filter((c) => c.site === "s1").map((c) => c.cell)).requests, 26);

      // The minute closes on both; once the grace has passed, both check: one notification.
      clock.advance(MINUTE_MS);
      ra.rollups.sample();
      rb.rollups.sample();
      await Promise.all([ra.spike.check(), rb.spike.check()]);
      assertEquals(notes.length, 0, "not before the grace");
      clock.advance(SPIKE_GRACE_MS);
      await Promise.all([ra.spike.check(), rb.spike.check()]);
      assertEquals(notes.length, 1);
      assertEquals(notes[0]!.kind, "attack.spike");
      assertEquals(notes[0]!.data?.blocked, 13);
      ok(notes[0]!.title.includes("13 requests"));
      // Later checks do not judge that minute again.
      clock.advance(MINUTE_MS);
      await Promise.all([ra.spike.check(), rb.spike.check()]);
      assertEquals(notes.length, 1);
    });
  },
});

Deno.test({
  name:
    "two controllers: a deployment-wide realtime event reaches both feeds once; a data-plane event stays local (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      const busA = createEventBus({ clock });
      const busB = createEventBus({ clock });
      relayRealtime(busA, a.coordinator);
      relayRealtime(busB, b.coordinator);
      const all = { kinds: null, sites: null };
      const feedA = busA.subscribe(all, "sse");
      const feedB = busB.subscribe(all, "sse");
      busA.publish("config.changed", { method: "POST", route: "/api/sites", actor: "admin" }, {
        id: "s1",
        name: "shop",
      });
      busA.access(record({ action: "block", status: 403 }));
      await waitFor(() => feedB.queue.length >= 1, "the relayed event on B");
      // Long enough for an echo back to A, or a second copy on B, to arrive.
      await new Promise((r) => setTimeout(r, 300));
      assertEquals(feedA.queue.map((e) => e.kind), ["config.changed", "access.blocked"]);
      assertEquals(feedB.queue.map((e) => e.kind), ["config.changed"]);
      const relayed = JSON.parse(feedB.queue[0]!.envelope());
      assertEquals(relayed.site_id, "s1");
      assertEquals(relayed.site, "shop");
      assertEquals(relayed.data, { method: "POST", route: "/api/sites", actor: "admin" });
      busA.close();
      busB.close();
    });
  },
});
