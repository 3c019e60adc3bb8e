/**
 * Two controllers of one deployment in one process, on the real PostgreSQL: each with its own
 * store connection and coordinator on a schema of the test's own (dropped after), one fake
 * clock. A scheduled task's due time runs once (and a controller's own task on each), a lease
 * is taken over once its holder stops renewing, a notification delivery reaches a loopback
 * webhook once, the dashboard's rollups add both controllers' traffic, an attack spike spread
 * over both is notified once, and a deployment-wide realtime event reaches both feeds once. A
 * run is its controller's: another controller starting leaves it alone, it is marked interrupted
 * once its controller is gone, and a deployment task in flight anywhere refuses a second run.
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
import { AppError } from "../../../mod/core/errors.ts";
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

/** A scheduler of controller `c` that shares the store with the others (the production wiring). */
function sharedScheduler(c: Controller, clock: FakeClock, tasks: TaskDef<never>[]) {
  return createScheduler({
    repo: createOpsTasksRepo(c.db),
    clock,
    random: systemRandom,
    logger: createMemoryLogger(),
    transaction: c.tx,
    lease: (task) => c.coordinator.acquire(`ops.${task}`),
    shared: {
      controllerId: c.coordinator.controllerId,
      controllers: () => c.coordinator.controllers(),
    },
  }, tasks);
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
      const make = (c: Controller) => sharedScheduler(c, clock, tasks(c.name));
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
      const make = (c: Controller, def: TaskDef<never>) => sharedScheduler(c, clock, [def]);
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

/** Runs that end when the test releases them, by `task@controller`. */
function gate() {
  const open = new Map<string, () => void>();
  return {
    run: (key: string) => () => new Promise<void>((r) => open.set(key, r)),
    release(key: string) {
      const r = open.get(key);
      ok(r, `no run of ${key} in flight`);
      open.delete(key);
      r();
    },
    releaseAll() {
      for (const key of [...open.keys()]) this.release(key);
    },
  };
}

/** The AppError `p` rejects with (fails when it is accepted). */
async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => new Error("accepted"), (err: unknown) => err);
  ok(err instanceof AppError, String(err));
  return err;
}

const SIX_HOURS = 6 * 60 * MIN;

/** A task due every six hours. */
function sixHourly(
  id: string,
  run: TaskDef<never>["run"],
  more: Partial<TaskDef<never>> = {},
): TaskDef<never> {
  return { id, title: id, description: "", schedule: { every_ms: SIX_HOURS }, run, ...more };
}

Deno.test({
  name:
    "two controllers: a controller that starts leaves another's run alone; runs whose controller is gone are marked interrupted (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      const runs = gate();
      const backup = (who: string) => [sixHourly("backup", runs.run(`backup@${who}`))];
      const sa = sharedScheduler(a, clock, backup("a"));
      const first = await sa.runNow("backup", "admin");
      assertEquals(first.run.detail, { controller: "ctrl-a" }, "the run names its controller");
      // B starts (made, started, ticking) while A's backup runs: the run stays A's.
      const sb = sharedScheduler(b, clock, backup("b"));
      sb.start();
      await sb.idle();
      await sb.stop();
      assertEquals(sb.runs("backup", 10).map((r) => r.result), ["running"]);
      runs.release("backup@a");
      assertEquals((await first.done).result, "ok");
      assertEquals(sb.runs("backup", 10).map((r) => [r.result, r.error]), [["ok", null]]);

      // A's live run, and rows left `running`: B's own (an earlier scheduler of B), one naming no
      // controller (an older build's), one of a controller not (yet) in the registry.
      const second = await sa.runNow("backup", "admin");
      const repo = createOpsTasksRepo(b.db);
      const left = (owner: string | null) =>
        repo.started(
          "backup",
          "manual",
          "admin",
          clock.now(),
          owner && `{"controller":"${owner}"}`,
        );
      const own = left("ctrl-b");
      const unowned = left(null);
      const unknown = left("ctrl-new");
      await sb.tick();
      const result = (id: number) => {
        const r = sb.runs("backup", 20).find((r) => r.id === id)!;
        return r.result === "error" && r.error?.startsWith("interrupted")
          ? "interrupted"
          : r.result;
      };
      assertEquals(
        [own, unowned, unknown, second.run.id].map(result),
        ["interrupted", "interrupted", "running", "running"],
      );

      // A stops heartbeating: once the registry sees it gone, B marks its run; so is the unknown
      // controller's, which never registered.
      clock.advance(STALE_MS - 1_000);
      await b.coordinator.heartbeat();
      await sb.tick();
      assertEquals([unknown, second.run.id].map(result), ["running", "running"]);
      clock.advance(1_000);
      await b.coordinator.heartbeat();
      await sb.tick();
      assertEquals([unknown, second.run.id].map(result), ["interrupted", "interrupted"]);
      // A was only cut off (its heartbeat lapsed): its run's end still writes the real result.
      runs.release("backup@a");
      assertEquals((await second.done).result, "ok");
      assertEquals(result(second.run.id), "ok");
    });
  },
});

Deno.test({
  name:
    "two controllers: a deployment task running on one is running on both: 409 TASK_RUNNING, and the scheduled run waits (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      const runs = gate();
      const tasks = (who: string) => [
        sixHourly("backup", runs.run(`backup@${who}`)),
        sixHourly("clock", runs.run(`clock@${who}`), { scope: "controller" }),
      ];
      const sa = sharedScheduler(a, clock, tasks("a"));
      const sb = sharedScheduler(b, clock, tasks("b"));
      try {
        const onA = await sa.runNow("backup", "admin");
        assertEquals([sa.get("backup").running, sb.get("backup").running], [true, true]);
        const refused = await refusal(sb.runNow("backup", "admin"));
        assertEquals([refused.status, refused.code], [409, "TASK_RUNNING"]);
        ok(refused.message.includes("on another controller"), refused.message);
        // A controller's own task running on A does not stop B's.
        await sa.runNow("clock", "admin");
        assertEquals(sb.get("clock").running, false);
        await sb.runNow("clock", "admin");

        // The due time comes on B, the lease holder, while A's manual run goes on: it waits.
        assertEquals(await b.coordinator.acquire("ops.backup"), true);
        clock.advance(SIX_HOURS);
        await a.coordinator.heartbeat();
        await sb.tick();
        assertEquals(sb.runs("backup", 10).length, 1, "no second run while A's runs");
        runs.release("backup@a");
        assertEquals((await onA.done).result, "ok");
        assertEquals(sb.get("backup").running, false);
        clock.advance(30_000);
        await a.coordinator.heartbeat();
        const scheduled = sb.tick();
        await waitFor(() => sb.isRunning("backup"), "B's scheduled run");
        assertEquals(
          sb.runs("backup", 10).map((r) => [r.trigger, r.result]),
          [["schedule", "running"], ["manual", "ok"]],
        );
        runs.release("backup@b");
        await scheduled;

        // A run of a controller that is gone does not refuse one: B sees A stale and runs it.
        const stuck = await sa.runNow("backup", "admin");
        clock.advance(STALE_MS);
        await b.coordinator.heartbeat();
        const onB = await sb.runNow("backup", "admin");
        assertEquals(onB.run.detail, { controller: "ctrl-b" });
        const previous = sb.runs("backup", 10).find((r) => r.id === stuck.run.id)!;
        assertEquals(previous.result, "error");
        ok(previous.error?.startsWith("interrupted"));
      } finally {
        runs.releaseAll();
        await Promise.all([sa.idle(), sb.idle()]);
      }
    });
  },
});

Deno.test({
  name:
    "two controllers: a deployment task that runs at start runs when the deployment starts, not when a controller joins it (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    await withTwo(async ({ a, b, clock }) => {
      const ran: string[] = [];
      const tasks = (who: string) => [
        sixHourly("check", () => void ran.push(`check@${who}`), { runAtStart: true }),
        sixHourly("clock", () => void ran.push(`clock@${who}`), {
          runAtStart: true,
          scope: "controller",
        }),
      ];
      const startOn = async (c: Controller) => {
        const s = sharedScheduler(c, clock, tasks(c.name));
        s.start();
        await s.idle();
        await s.stop();
        return s;
      };
      // Only A is alive (B's registration is stale): the deployment starts with A.
      clock.advance(STALE_MS);
      await a.coordinator.heartbeat();
      const sa = await startOn(a);
      assertEquals(ran.sort(), ["check@a", "clock@a"]);
      const planned = new Date(clock.now() + SIX_HOURS).toISOString();
      assertEquals(sa.get("check").next_run_at, planned);

      // B joins while A is alive: only B's own task runs, the stored next run stands.
      ran.length = 0;
      clock.advance(MIN);
      await a.coordinator.heartbeat();
      await b.coordinator.heartbeat();
      const sb = await startOn(b);
      assertEquals(ran, ["clock@b"]);
      assertEquals(sb.get("check").next_run_at, planned);

      // Every controller stopped; later B starts again: the deployment starts, so it runs.
      ran.length = 0;
      clock.advance(STALE_MS);
      await startOn(b);
      assertEquals(ran.sort(), ["check@b", "clock@b"]);
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
