/**
 * The process's one task scheduler. Every periodic maintenance job (retention, cleanups, feed
 * syncs, integrity check, backup, optimisation, certificate checks, time synchronisation) is a
 * task with a schedule (an interval or a cron expression, evaluated by croner in UTC), an
 * enabled state, a jitter and its own settings, all persisted in the store; the next run is
 * persisted too, so a restart neither repeats a daily job nor postpones it forever (a missed run
 * happens soon after start). One timer wakes the scheduler at the earliest due run (at least
 * every `checkEveryMs`, so a task's own earlier deadline - the token cleanup's sliding one - is
 * seen). A task runs once at a time: a manual run while it runs answers 409. Every run is
 * recorded with its duration, result and error; a finished run is published as `task.finished`
 * and a failed one raises an administrator notification.
 *
 * Several controllers on one production store (`lease` given): a `deployment` task's due time
 * runs on the controller holding the task's lease, and only if the stored next run is still the
 * one it saw (a compare-and-set in the run's start transaction, which the store serialises
 * across controllers), so a due time runs once even while a lapsed lease changes hands. A
 * controller that does not hold the lease looks again after `checkEveryMs` (the holder, or its
 * successor once the lease is stale, runs it) and hands its own earlier deadline to the stored
 * next run. A `controller` task keeps its next run in this process and runs on every controller.
 *
 * With `shared` as well (the production profile; mod/ops/run_owners.ts), a run records the
 * controller that started it, so: a run left `running` is marked interrupted only once its
 * controller is gone (at every tick, not by whichever controller starts), a `deployment` task
 * running on another live controller counts as running here too (a manual run answers 409, a
 * scheduled one waits for its end), and a `deployment` task that runs at start does so only when
 * no other controller of the deployment is alive (the deployment starting, not one more
 * controller joining it; the stored next run stands otherwise).
 */
import type { OpsTasksRepo, TaskRow } from "../../db/ops_tasks_repo.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { Notify } from "../core/notifications.ts";
import type { Random } from "../core/random.ts";
import { RunOwners, type SharedStore } from "./run_owners.ts";
import { describeSchedule, nextAfter } from "./schedule.ts";
import {
  dueOf,
  iso,
  patchedSettings,
  type RunView,
  runView,
  schedulingOf,
  settingsOf,
  type TaskDef,
  type TaskUpdate,
} from "./task.ts";

export interface SchedulerDeps {
  readonly repo: OpsTasksRepo;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly transaction: <T>(fn: () => T) => T;
  readonly notify?: Notify;
  /** The realtime bus's publish (`task.finished`). */
  readonly publish?: (kind: "task.finished", payload: Record<string, unknown>) => void;
  /** The longest the timer sleeps before looking again (default 30 s). */
  readonly checkEveryMs?: number;
  /**
   * Takes the deployment-wide lease of a task before a scheduled run (several controllers on one
   * production store: each due time runs on the lease holder only). Absent: always this process.
   */
  readonly lease?: (task: string) => Promise<boolean>;
  /**
   * The deployment of controllers sharing the store (production): runs are recorded with their
   * controller and judged against the registry. Absent: one process, so every run left `running`
   * when the scheduler is made is its own leftover.
   */
  readonly shared?: SharedStore;
}

/** What a finished run reports (`task.finished`, and the failure notification). */
type Finished = {
  readonly task: string;
  readonly title: string;
  readonly run_id: number;
  readonly trigger: "schedule" | "manual";
  readonly result: "ok" | "error";
  readonly duration_ms: number;
  readonly error: string | null;
};

/** The refusal of a second run; `elsewhere`: the run in flight is another controller's. */
const running = (id: string, elsewhere = false) =>
  new AppError(
    409,
    "TASK_RUNNING",
    `Task "${id}" is running${elsewhere ? " on another controller" : ""}; try again when it ends`,
  );

/** How soon the timer looks again after the store could not tell the next runs. */
const STORE_RETRY_MS = 5_000;

export function createScheduler(deps: SchedulerDeps, tasks: readonly TaskDef<never>[]): Scheduler {
  return new Scheduler(deps, tasks);
}

export class Scheduler {
  readonly #deps: SchedulerDeps;
  readonly #defs = new Map<string, TaskDef<unknown>>();
  readonly #running = new Map<string, Promise<RunView>>();
  readonly #checkEveryMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #started = false;
  /** `controller` tasks' next runs on this process (with a lease: several controllers). */
  readonly #localNext = new Map<string, number | null>();
  /** Deployment tasks whose lease another controller holds: not asked again before this time. */
  readonly #notBefore = new Map<string, number>();
  /** Own deadlines (`dueAt`) already handed to the stored next run. */
  readonly #handed = new Map<string, number>();
  /** The runs in flight in this process, by run id. */
  readonly #runIds = new Set<number>();
  readonly #owners: RunOwners | undefined;
  /** `deployment` tasks that run at start, when the registry shows no other live controller. */
  readonly #atStart = new Set<string>();
  /** The tick in progress, if any. */
  #ticking: Promise<void> | undefined;

  /** Rows for every task (a stored schedule wins over the default) and their first next run. */
  constructor(deps: SchedulerDeps, tasks: readonly TaskDef<never>[]) {
    this.#deps = deps;
    for (const t of tasks) this.#defs.set(t.id, t as unknown as TaskDef<unknown>);
    this.#checkEveryMs = deps.checkEveryMs ?? 30_000;
    const { repo } = deps;
    const now = deps.clock.now();
    this.#owners = deps.shared && new RunOwners({ ...deps, shared: deps.shared });
    deps.transaction(() => {
      // One process: whatever is left `running` is its own. Shared: the first tick sweeps.
      if (!this.#owners) repo.interrupted(now);
      for (const d of this.#defs.values()) {
        repo.ensure({
          id: d.id,
          schedule: JSON.stringify(d.schedule),
          enabled: d.enabled === false ? 0 : 1,
          jitter_ms: d.jitterMs ?? 0,
          settings: JSON.stringify(d.settings ? d.settings.parse({}) : {}),
          updated_at: now,
        });
        const r = this.#row(d.id);
        if (!r.enabled) continue;
        if (d.runAtStart && this.#owners && d.scope !== "controller") this.#atStart.add(d.id);
        if (d.runAtStart && !this.#atStart.has(d.id)) repo.setNext(d.id, now);
        else if (r.next_run_at === null) repo.setNext(d.id, this.#plan(r, now));
      }
    });
    for (const d of this.#defs.values()) {
      if (deps.lease && d.scope === "controller") {
        this.#localNext.set(d.id, this.#row(d.id).next_run_at);
      }
    }
  }

  ids(): string[] {
    return [...this.#defs.keys()];
  }

  list() {
    return this.ids().map((id) => this.get(id));
  }

  get(id: string) {
    const d = this.#def(id);
    const r = this.#row(id);
    const last = this.#deps.repo.last(id);
    return {
      id,
      title: d.title,
      description: d.description,
      schedule: schedulingOf(r),
      schedule_text: describeSchedule(schedulingOf(r)),
      jitter_ms: r.jitter_ms,
      enabled: r.enabled === 1,
      settings: settingsOf(d, r),
      running: this.#running.has(id) || this.#runsElsewhere(id, d),
      next_run_at: iso(this.#due(id, d, r, false)),
      last_run: last ? runView(last) : null,
    };
  }

  runs(id: string, limit: number, before?: number): RunView[] {
    this.#def(id);
    return this.#deps.repo.runs(id, limit, before).map(runView);
  }

  /** Changes schedule, enabled state, jitter or settings; returns the task's view. */
  update(id: string, patch: TaskUpdate) {
    const { repo, clock } = this.#deps;
    const d = this.#def(id);
    const r = this.#row(id);
    const settings = patchedSettings(d, r, patch.settings);
    const next: TaskRow = {
      ...r,
      schedule: patch.schedule ? JSON.stringify(patch.schedule) : r.schedule,
      enabled: patch.enabled === undefined ? r.enabled : patch.enabled ? 1 : 0,
      jitter_ms: patch.jitter_ms ?? r.jitter_ms,
      settings: JSON.stringify(settings),
      updated_at: clock.now(),
    };
    const replan = patch.schedule !== undefined || patch.enabled !== undefined ||
      patch.jitter_ms !== undefined;
    repo.update({ ...next, next_run_at: replan ? this.#plan(next, clock.now()) : r.next_run_at });
    if (replan) {
      if (this.#localNext.has(id)) this.#localNext.set(id, this.#row(id).next_run_at);
      this.#notBefore.delete(id);
    }
    this.#arm();
    return this.get(id);
  }

  /**
   * Starts a run now; 409 `TASK_RUNNING` while the task runs (a `deployment` task: on any live
   * controller of the deployment).
   */
  async runNow(id: string, actor: string): Promise<{ run: RunView; done: Promise<RunView> }> {
    const d = this.#def(id);
    if (this.#running.has(id)) throw running(id);
    // A run another controller left behind must not refuse this one once that controller is gone.
    if (this.#owners && d.scope !== "controller") await this.#owners.sweep(this.#runIds);
    if (this.#running.has(id)) throw running(id);
    const started = this.#execute(id, "manual", actor);
    if (started.kind !== "started") throw running(id, true);
    const { runId, done } = started;
    return {
      run: runView(this.#deps.repo.run(runId)!),
      done,
    };
  }

  isRunning(id: string): boolean {
    return this.#running.has(id);
  }

  /** Starts every due task that is not running; resolves when those runs end. */
  async tick(): Promise<void> {
    if (this.#owners) await this.#owners.sweep(this.#runIds);
    const now = this.#deps.clock.now();
    const runs: Promise<unknown>[] = [];
    for (const [id, d] of this.#defs) {
      if (this.#running.has(id)) continue;
      const r = this.#row(id);
      const due = this.#due(id, d, r);
      if (due === null || due > now) continue;
      if (this.#deps.lease && d.scope !== "controller") {
        const held = await this.#deps.lease(id).catch((err) => {
          this.#deps.logger.warn("task lease check failed", { task: id, error: err as Error });
          return false;
        });
        if (!held) {
          this.#elsewhere(id, d, r, now);
          continue;
        }
        this.#notBefore.delete(id);
        if (this.#running.has(id)) continue;
      }
      const started = this.#execute(id, "schedule", null, r.next_run_at);
      if (started.kind === "started") runs.push(started.done);
      // Running on another controller: the due time waits for its end, looked at again later.
      else if (started.kind === "elsewhere") this.#notBefore.set(id, now + this.#checkEveryMs);
    }
    await Promise.allSettled(runs);
  }

  /** Starts the timer; what is due (the tasks that run at start) begins before this returns. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#tickThenArm(this.#atStart.size > 0 ? this.#startShared() : undefined);
  }

  /**
   * Another controller changed a task's schedule in the shared store: the timer is armed again
   * from the stored next runs, so this controller is at the new due time too (and the lease, not
   * a timer that slept past it, decides which controller runs it).
   */
  rescheduled(): void {
    this.#arm();
  }

  /** Resolves when the tick in progress and the runs in flight now have ended. */
  async idle(): Promise<void> {
    await this.#ticking;
    await Promise.allSettled([...this.#running.values()]);
  }

  /** Stops the timer and waits for runs in flight. */
  async stop(): Promise<void> {
    this.#started = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.idle();
  }

  /** Whether a `deployment` task runs on another controller (shared store only). */
  #runsElsewhere(id: string, d: TaskDef<unknown>): boolean {
    return !!this.#owners && d.scope !== "controller" && this.#owners.elsewhere(id, this.#runIds);
  }

  /**
   * The `deployment` tasks that run at start are due now only when no other controller is alive
   * (one that is has been running them); a registry that cannot answer runs them, as one
   * process would.
   */
  async #startShared(): Promise<void> {
    const others = await this.#owners!.othersAlive();
    if (others) return;
    const now = this.#deps.clock.now();
    this.#deps.transaction(() => {
      for (const id of this.#atStart) {
        if (this.#row(id).enabled) this.#deps.repo.setNext(id, now);
      }
    });
  }

  #def(id: string): TaskDef<unknown> {
    const d = this.#defs.get(id);
    if (!d) throw new AppError(404, "NOT_FOUND", `No task "${id}"`);
    return d;
  }

  #row(id: string): TaskRow {
    return this.#deps.repo.get(id)!;
  }

  /**
   * Where this process stands on the task's next run (null: none planned); `waiting`: not before
   * it asks another controller's lease again.
   */
  #due(id: string, d: TaskDef<unknown>, r: TaskRow, waiting = true): number | null {
    if (!r.enabled) return null;
    if (this.#deps.lease && d.scope === "controller" && this.#localNext.has(id)) {
      return this.#localNext.get(id)!;
    }
    const own = d.dueAt?.();
    const handed = own !== undefined && this.#handed.get(id) === own;
    const due = dueOf(handed ? { ...d, dueAt: undefined } : d, r);
    const wait = waiting ? this.#notBefore.get(id) : undefined;
    return due === null || wait === undefined ? due : Math.max(due, wait);
  }

  /**
   * Another controller holds the task's lease: look again later (it runs the due time, or its
   * successor once its lease is stale), and give it this process's earlier deadline.
   */
  #elsewhere(id: string, d: TaskDef<unknown>, r: TaskRow, now: number): void {
    this.#notBefore.set(id, now + this.#checkEveryMs);
    const own = d.dueAt?.();
    if (own === undefined || this.#handed.get(id) === own) return;
    if (r.next_run_at === null || own < r.next_run_at) this.#deps.repo.bringForward(id, own);
    this.#handed.set(id, own);
  }

  #jitter(ms: number): number {
    if (ms <= 0) return 0;
    const b = this.#deps.random.bytes(4);
    const n = ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
    return Math.floor((n / 0x1_0000_0000) * ms);
  }

  #plan(r: TaskRow, from: number): number | null {
    if (!r.enabled) return null;
    const next = nextAfter(schedulingOf(r), from);
    return Number.isFinite(next) ? next + this.#jitter(r.jitter_ms) : null;
  }

  /**
   * Starts a run, claimed in one transaction (which the store serialises across controllers):
   * `elsewhere` when a `deployment` task runs on another controller; for a scheduled run of a
   * deployment task, `taken` when the stored next run is no longer `seen` (another controller
   * ran that due time).
   */
  #execute(
    id: string,
    trigger: "schedule" | "manual",
    actor: string | null,
    seen?: number | null,
  ):
    | { kind: "started"; runId: number; done: Promise<RunView> }
    | { kind: "taken" | "elsewhere" } {
    const { repo, clock } = this.#deps;
    const d = this.#def(id);
    const local = this.#deps.lease !== undefined && d.scope === "controller";
    const startedAt = clock.now();
    const claimed = this.#deps.transaction(() => {
      const r = this.#row(id);
      if (trigger === "schedule" && !local && seen !== undefined && r.next_run_at !== seen) {
        return "taken" as const;
      }
      if (this.#runsElsewhere(id, d)) return "elsewhere" as const;
      if (trigger === "schedule") {
        const next = this.#plan(r, startedAt);
        if (local) this.#localNext.set(id, next);
        repo.setNext(id, next);
      }
      const detail = this.#owners?.startDetail ?? null;
      return { r, runId: repo.started(id, trigger, actor, startedAt, detail) };
    });
    if (typeof claimed === "string") return { kind: claimed };
    const { r, runId } = claimed;
    const t0 = performance.now();
    const p = (async () => {
      let error: string | null = null;
      let detail: Record<string, unknown> | void = undefined;
      try {
        detail = await d.run({ settings: settingsOf(d, r), trigger });
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      const durationMs = Math.round(performance.now() - t0);
      const result = error === null ? "ok" : "error";
      this.#deps.transaction(() =>
        repo.finished(runId, id, {
          at: clock.now(),
          result,
          durationMs,
          error,
          detail: detail ? JSON.stringify(detail) : null,
        })
      );
      this.#report({
        task: id,
        title: d.title,
        run_id: runId,
        trigger,
        result,
        duration_ms: durationMs,
        error,
      });
      // By id: another controller's run of the task may be newer (a controller task's, say).
      return runView(repo.run(runId)!);
    })().finally(() => {
      this.#running.delete(id);
      this.#runIds.delete(runId);
    });
    this.#running.set(id, p);
    this.#runIds.add(runId);
    return { kind: "started", runId, done: p };
  }

  /** Publishes `task.finished` and notifies a failure; neither may fail the run. */
  #report(payload: Finished): void {
    const { logger } = this.#deps;
    try {
      this.#deps.publish?.("task.finished", payload);
    } catch (err) {
      logger.error("task.finished could not be published", { error: err as Error });
    }
    const { task: id, title, trigger, duration_ms: durationMs, error } = payload;
    if (error === null) return;
    logger.warn("task failed", { task: id, trigger, error });
    try {
      this.#deps.notify?.({
        level: "warning",
        kind: "task.failed",
        title: `Task "${title}" failed`,
        body: `The ${trigger} run of "${title}" (${id}) failed after ${durationMs} ms: ${error}`,
        data: payload,
        link: "/console/ops-tasks",
      });
    } catch (err) {
      logger.error("task failure notification failed", { error: err as Error });
    }
  }

  /** Ticks (after `first`, when given), then arms the timer. */
  #tickThenArm(first?: Promise<void>): void {
    const ticking = (first ? first.then(() => this.tick()) : this.tick()).catch((err) =>
      this.#deps.logger.error("scheduler tick failed", { error: err as Error })
    ).finally(() => {
      if (this.#ticking === ticking) this.#ticking = undefined;
      this.#arm();
    });
    this.#ticking = ticking;
  }

  #arm(): void {
    if (!this.#started) return;
    clearTimeout(this.#timer);
    const now = this.#deps.clock.now();
    let wait = this.#checkEveryMs;
    try {
      for (const [id, d] of this.#defs) {
        if (this.#running.has(id)) continue;
        const due = this.#due(id, d, this.#row(id));
        if (due !== null) wait = Math.min(wait, Math.max(0, due - now));
      }
    } catch (err) {
      // The store cannot answer (the production database is away): the timer is armed anyway,
      // so the schedule resumes by itself once it is back (a throw here left it unarmed).
      this.#deps.logger.warn("scheduler cannot read the next runs; looking again soon", {
        error: err as Error,
      });
      wait = Math.min(wait, STORE_RETRY_MS);
    }
    this.#timer = setTimeout(() => this.#tickThenArm(), Math.max(wait, 50));
    Deno.unrefTimer(this.#timer);
  }
}
