/**
 * The task scheduler on a real store with a fake clock: interval and cron schedules, jitter
 * bounds, persistence across a restart (a changed schedule and the next run survive; a run the
 * process left behind is marked interrupted), one run at a time (409), failures reported to the
 * notification and realtime hooks, and a task's own earlier deadline.
 */
import { assertEquals, assertRejects, ok } from "../../_helpers/assert.ts";
import { testStore } from "../../_helpers/store.ts";
import { createOpsTasksRepo } from "../../../db/ops_tasks_repo.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { AppError } from "../../../mod/core/errors.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import type { NewNotification } from "../../../mod/core/notifications.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createScheduler } from "../../../mod/ops/scheduler.ts";
import type { TaskDef } from "../../../mod/ops/task.ts";

const MIN = 60_000;
const START = Date.UTC(2026, 0, 1, 0, 0, 0);

function setup(
  store: { db: import("../../../db/store.ts").Db; transaction: <T>(fn: () => T) => T },
  tasks: TaskDef<never>[],
  clock: FakeClock,
) {
  const notes: NewNotification[] = [];
  const events: Record<string, unknown>[] = [];
  const scheduler = createScheduler({
    repo: createOpsTasksRepo(store.db),
    clock,
    random: systemRandom,
    logger: createMemoryLogger(),
    transaction: store.transaction,
    notify: (n) => {
      notes.push(n);
      return "id";
    },
    publish: (_kind, payload) => events.push(payload),
  }, tasks);
  return { scheduler, notes, events };
}

/** The AppError `p` rejects with (fails when it is accepted). */
async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => new Error("accepted"), (err: unknown) => err);
  ok(err instanceof AppError, String(err));
  return err;
}

Deno.test("an interval task runs when due, records the run and plans the next one", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  let runs = 0;
  const { scheduler, events } = setup(store, [{
    id: "count",
    title: "Count",
    description: "",
    schedule: { every_ms: 10 * MIN },
    run: () => ({ n: ++runs }),
  }], clock);
  assertEquals(scheduler.get("count").next_run_at, new Date(START + 10 * MIN).toISOString());
  await scheduler.tick();
  assertEquals(runs, 0, "not due yet");
  clock.advance(10 * MIN);
  await scheduler.tick();
  assertEquals(runs, 1);
  const view = scheduler.get("count");
  assertEquals(view.last_run?.result, "ok");
  assertEquals(view.last_run?.trigger, "schedule");
  assertEquals(view.last_run?.detail, { n: 1 });
  assertEquals(view.next_run_at, new Date(START + 20 * MIN).toISOString());
  assertEquals(events.map((e) => [e.task, e.result]), [["count", "ok"]]);
});

Deno.test("jitter delays each scheduled run by less than jitter_ms, differently each time", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  const { scheduler } = setup(store, [{
    id: "j",
    title: "J",
    description: "",
    schedule: { cron: "0 * * * *" },
    jitterMs: 20 * MIN,
    run: () => {},
  }], clock);
  const seen = new Set<number>();
  for (let i = 0; i < 20; i++) {
    const next = Date.parse(scheduler.update("j", { jitter_ms: 20 * MIN }).next_run_at!);
    ok(next >= START + 60 * MIN && next < START + 80 * MIN, `within the jitter: ${next - START}`);
    seen.add(next);
  }
  ok(seen.size > 5, "spread");
});

Deno.test("the schedule and the next run persist across a restart; a run left behind is interrupted", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  const task: TaskDef<never> = {
    id: "t",
    title: "T",
    description: "",
    schedule: { every_ms: 6 * 60 * MIN },
    run: () => {},
  };
  const first = setup(store, [task], clock).scheduler;
  first.update("t", { schedule: { cron: "15 1 * * *" } });
  const next = first.get("t").next_run_at;
  assertEquals(next, new Date(Date.UTC(2026, 0, 1, 1, 15)).toISOString());
  createOpsTasksRepo(store.db).started("t", "manual", "admin", START);
  clock.advance(5 * MIN);
  const second = setup(store, [task], clock).scheduler;
  const view = second.get("t");
  assertEquals(view.schedule, { cron: "15 1 * * *" });
  assertEquals(view.next_run_at, next);
  assertEquals(view.last_run?.result, "error");
  ok(view.last_run?.error?.includes("interrupted"));
});

Deno.test("one process (no shared store): a new scheduler marks every run left running, whoever it names; runs name no controller", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  createOpsTasksRepo(store.db).started("t", "schedule", null, START, '{"controller":"other"}');
  const run = () => ({ ok: true });
  const { scheduler } = setup(store, [{
    id: "t",
    title: "T",
    description: "",
    schedule: { every_ms: MIN },
    run,
  }], clock);
  assertEquals(scheduler.runs("t", 10).map((r) => r.result), ["error"]);
  assertEquals(scheduler.get("t").running, false);
  const manual = await scheduler.runNow("t", "admin");
  assertEquals(manual.run.detail, null);
  assertEquals((await manual.done).detail, { ok: true });
});

Deno.test("a missed run happens at the next tick after a restart, not a period later", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  let runs = 0;
  const task: TaskDef<never> = {
    id: "daily",
    title: "Daily",
    description: "",
    schedule: { cron: "0 2 * * *" },
    run: () => void runs++,
  };
  setup(store, [task], clock);
  clock.set(Date.UTC(2026, 0, 3));
  const { scheduler } = setup(store, [task], clock);
  await scheduler.tick();
  assertEquals(runs, 1);
  assertEquals(scheduler.get("daily").next_run_at, new Date(Date.UTC(2026, 0, 3, 2)).toISOString());
});

Deno.test("a task that runs at start runs at every start, in start(), unless disabled", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  const runs: string[] = [];
  const tasks = (): TaskDef<never>[] =>
    ["at-start", "off"].map((id) => ({
      id,
      title: id,
      description: "",
      schedule: { every_ms: 6 * 60 * MIN },
      runAtStart: true,
      run: () => void runs.push(id),
    }));
  for (let start = 1; start <= 2; start++) {
    const { scheduler } = setup(store, tasks(), clock);
    if (start === 1) scheduler.update("off", { enabled: false });
    scheduler.start();
    // The run began inside start(), not on a later timer.
    assertEquals(runs.filter((r) => r === "at-start").length, start);
    await scheduler.stop();
    assertEquals(
      scheduler.get("at-start").next_run_at,
      new Date(clock.now() + 6 * 60 * MIN).toISOString(),
    );
    // A minute later: well before the stored next run, which a start does not wait for.
    clock.advance(MIN);
  }
  assertEquals(runs.includes("off"), false);
});

Deno.test("one run at a time: a manual run while the task runs is refused with 409 TASK_RUNNING", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  let release!: () => void;
  const { scheduler } = setup(store, [{
    id: "slow",
    title: "Slow",
    description: "",
    schedule: { every_ms: MIN },
    run: () => new Promise<void>((r) => release = r),
  }], clock);
  const { run, done } = await scheduler.runNow("slow", "admin");
  assertEquals(run.result, "running");
  ok(scheduler.get("slow").running);
  const refused = await refusal(scheduler.runNow("slow", "admin"));
  assertEquals([refused.status, refused.code], [409, "TASK_RUNNING"]);
  clock.advance(MIN);
  await scheduler.tick();
  assertEquals(scheduler.runs("slow", 10).length, 1, "the scheduled run skips a running task");
  release();
  assertEquals((await done).result, "ok");
  assertEquals((await done).actor, "admin");
  const again = await scheduler.runNow("slow", "admin");
  assertEquals(again.run.result, "running", "free again");
  release();
  await again.done;
});

Deno.test("a failed run is recorded with its error, notifies and publishes task.finished", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  const { scheduler, notes, events } = setup(store, [{
    id: "broken",
    title: "Broken",
    description: "",
    schedule: { every_ms: MIN },
    run: () => Promise.reject(new Error("disk full")),
  }], clock);
  const run = await (await scheduler.runNow("broken", "admin")).done;
  assertEquals([run.result, run.error], ["error", "disk full"]);
  assertEquals(notes.length, 1);
  assertEquals(notes[0]!.kind, "task.failed");
  ok(notes[0]!.body.includes("disk full"));
  assertEquals(events.length, 1);
  assertEquals([events[0]!.task, events[0]!.result, events[0]!.error], [
    "broken",
    "error",
    "disk full",
  ]);
});

Deno.test("a task's own deadline brings its run forward (the token cleanup's sliding deadline)", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  let deadline: number | undefined;
  let runs = 0;
  const { scheduler } = setup(store, [{
    id: "cleanup",
    title: "Cleanup",
    description: "",
    schedule: { every_ms: 6 * 60 * MIN },
    dueAt: () => deadline,
    run: () => {
      runs++;
      deadline = undefined;
    },
  }], clock);
  deadline = START + 10 * MIN;
  assertEquals(scheduler.get("cleanup").next_run_at, new Date(START + 10 * MIN).toISOString());
  clock.advance(10 * MIN);
  await scheduler.tick();
  assertEquals(runs, 1);
  assertEquals(
    scheduler.get("cleanup").next_run_at,
    new Date(START + 10 * MIN + 6 * 60 * MIN).toISOString(),
  );
});

Deno.test("settings are validated against the task's schema; a disabled task has no next run", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  const { z } = await import("zod");
  const { scheduler } = setup(store, [{
    id: "s",
    title: "S",
    description: "",
    schedule: { every_ms: MIN },
    settings: z.strictObject({ keep: z.number().int().min(1).default(7) }),
    run: () => {},
  } as unknown as TaskDef<never>], clock);
  assertEquals(scheduler.get("s").settings, { keep: 7 });
  assertEquals(scheduler.update("s", { settings: { keep: 3 } }).settings, { keep: 3 });
  try {
    scheduler.update("s", { settings: { keep: 0 } });
    throw new Error("accepted");
  } catch (err) {
    ok(err instanceof AppError);
    assertEquals(err.details?.field, "settings.keep");
  }
  assertEquals(scheduler.update("s", { enabled: false }).next_run_at, null);
  await assertRejects(async () => {
    await (await scheduler.runNow("nope", "admin")).done;
  }, AppError);
});

Deno.test("two controllers on one store: a due time runs once, on the lease holder; a successor takes over", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  let runs = 0;
  const task: TaskDef<never> = {
    id: "count",
    title: "Count",
    description: "",
    schedule: { every_ms: 10 * MIN },
    run: () => ({ n: ++runs }),
  };
  // The lease table as the coordinator keeps it: the first asker holds it until it is freed.
  let holder: string | undefined;
  const leaseFor = (who: string) => (_task: string) => {
    holder ??= who;
    return Promise.resolve(holder === who);
  };
  const events: Record<string, unknown>[] = [];
  const make = (who: string) =>
    createScheduler({
      repo: createOpsTasksRepo(store.db),
      clock,
      random: systemRandom,
      logger: createMemoryLogger(),
      transaction: store.transaction,
      publish: (_kind, payload) => events.push({ ...payload, who }),
      lease: leaseFor(who),
    }, [task]);
  const a = make("a");
  const b = make("b");
  clock.advance(10 * MIN);
  await Promise.all([a.tick(), b.tick()]);
  assertEquals(runs, 1);
  assertEquals(events.map((e) => e.who), ["a"]);
  // A dies: its lease expires and B holds it; B runs the next due time, once.
  holder = "b";
  clock.advance(10 * MIN);
  await Promise.all([a.tick(), b.tick()]);
  assertEquals(runs, 2);
  assertEquals(events.map((e) => e.who), ["a", "b"]);
});

Deno.test("rescheduled() wakes the timer at a due time another controller stored, and the lease lets one run it", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  let runs = 0;
  const task = (): TaskDef<never>[] => [{
    id: "count",
    title: "Count",
    description: "",
    schedule: { every_ms: 10 * MIN },
    run: () => void runs++,
  }];
  // The deployment's lease: the first controller to ask holds it.
  let holder: string | undefined;
  const lease = (who: string) => () => Promise.resolve((holder ??= who) === who);
  const withLease = (who: string) =>
    createScheduler({
      repo: createOpsTasksRepo(store.db),
      clock,
      random: systemRandom,
      logger: createMemoryLogger(),
      transaction: store.transaction,
      // A timer that sleeps past the new due time unless woken.
      checkEveryMs: 60 * MIN,
      lease: lease(who),
    }, task());
  const a = withLease("a");
  const b = withLease("b");
  a.start();
  b.start();
  // start()'s first tick settles and arms each timer for the stored due time, 10 minutes away.
  await new Promise((r) => setTimeout(r, 100));
  try {
    // B's API changes the schedule (B's own timer sleeps until the new due time, an hour of the
    // fake clock, which is an hour of real time too); then the fake clock reaches it.
    b.update("count", { schedule: { every_ms: 60 * MIN } });
    clock.advance(60 * MIN);
    a.rescheduled();
    b.rescheduled();
    const until = Date.now() + 5_000;
    while (runs === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    await Promise.all([a.idle(), b.idle()]);
    assertEquals(runs, 1);
    assertEquals(a.runs("count", 10).filter((r) => r.trigger === "schedule").length, 1);
    ok(holder === "a" || holder === "b");
  } finally {
    await a.stop();
    await b.stop();
  }
});

Deno.test("a store that cannot answer leaves the timer armed, and the due task runs once it answers again", async () => {
  await using store = await testStore();
  const clock = new FakeClock(START);
  let runs = 0;
  let down = true;
  const repo = createOpsTasksRepo(store.db);
  const flaky: typeof repo = {
    ...repo,
    get: (id) => {
      if (down) throw new Error("The management database is unavailable");
      return repo.get(id);
    },
  };
  const logger = createMemoryLogger();
  // Rows made while the store answers; then the database goes away.
  down = false;
  const scheduler = createScheduler({
    repo: flaky,
    clock,
    random: systemRandom,
    logger,
    transaction: store.transaction,
    checkEveryMs: 100,
  }, [{
    id: "count",
    title: "Count",
    description: "",
    schedule: { every_ms: MIN },
    run: () => void runs++,
  }]);
  down = true;
  clock.advance(MIN);
  scheduler.start();
  try {
    await new Promise((r) => setTimeout(r, 300));
    assertEquals(runs, 0);
    down = false;
    const until = Date.now() + 3_000;
    while (runs === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    assertEquals(runs, 1);
  } finally {
    await scheduler.stop();
  }
});
