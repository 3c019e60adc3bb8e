/** SQL for the task scheduler: one row per task (its persisted schedule) and the run history. */
import type { Db } from "./store.ts";

export interface TaskRow {
  readonly id: string;
  /** JSON: `{ "every_ms": n }` or `{ "cron": "..." }`. */
  readonly schedule: string;
  readonly enabled: number;
  readonly jitter_ms: number;
  /** JSON object of the task's own settings. */
  readonly settings: string;
  readonly next_run_at: number | null;
  readonly updated_at: number;
}

export interface RunRow {
  readonly id: number;
  readonly task_id: string;
  /** `schedule` or `manual`. */
  readonly trigger: string;
  readonly actor: string | null;
  readonly started_at: number;
  readonly finished_at: number | null;
  /** `running`, `ok` or `error`. */
  readonly result: string;
  readonly duration_ms: number | null;
  readonly error: string | null;
  /** JSON of what the run reports (rows removed, file written, ...). */
  readonly detail: string | null;
}

/** The error of a run its process left behind. */
const INTERRUPTED = "interrupted: the process stopped during the run";

export function createOpsTasksRepo(db: Db, options: { keepRuns?: number } = {}) {
  const keepRuns = options.keepRuns ?? 200;
  const insertDefault = db.prepare(
    `INSERT OR IGNORE INTO ops_tasks (id, schedule, enabled, jitter_ms, settings, next_run_at, updated_at)
     VALUES (?, ?, ?, ?, ?, NULL, ?)`,
  );
  const one = db.prepare("SELECT * FROM ops_tasks WHERE id = ?");
  const update = db.prepare(
    `UPDATE ops_tasks SET schedule = ?, enabled = ?, jitter_ms = ?, settings = ?, next_run_at = ?,
       updated_at = ? WHERE id = ?`,
  );
  const setNext = db.prepare("UPDATE ops_tasks SET next_run_at = ? WHERE id = ?");
  const bringForward = db.prepare(
    "UPDATE ops_tasks SET next_run_at = ? WHERE id = ? AND (next_run_at IS NULL OR next_run_at > ?)",
  );
  const start = db.prepare(
    `INSERT INTO ops_task_runs (task_id, trigger, actor, started_at, result, detail)
     VALUES (?, ?, ?, ?, 'running', ?)`,
  );
  const finish = db.prepare(
    `UPDATE ops_task_runs SET finished_at = ?, result = ?, duration_ms = ?, error = ?, detail = ?
     WHERE id = ?`,
  );
  const interrupted = db.prepare(
    `UPDATE ops_task_runs SET finished_at = ?, result = 'error', error = ? WHERE result = 'running'`,
  );
  const interruptedOne = db.prepare(
    `UPDATE ops_task_runs SET finished_at = ?, result = 'error', error = ?
     WHERE id = ? AND result = 'running'`,
  );
  const runningAll = db.prepare("SELECT * FROM ops_task_runs WHERE result = 'running' ORDER BY id");
  const runningOf = db.prepare(
    "SELECT * FROM ops_task_runs WHERE task_id = ? AND result = 'running' ORDER BY id",
  );
  const oneRun = db.prepare("SELECT * FROM ops_task_runs WHERE id = ?");
  const last = db.prepare(
    "SELECT * FROM ops_task_runs WHERE task_id = ? AND result != 'running' ORDER BY id DESC LIMIT 1",
  );
  const runs = db.prepare(
    "SELECT * FROM ops_task_runs WHERE task_id = ? AND (? IS NULL OR id < ?) ORDER BY id DESC LIMIT ?",
  );
  const prune = db.prepare(
    `DELETE FROM ops_task_runs WHERE task_id = ? AND id <= (
       SELECT id FROM ops_task_runs WHERE task_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
  );
  return {
    /** Creates the task's row with its defaults unless it exists (a stored schedule wins). */
    ensure(row: Omit<TaskRow, "next_run_at">): void {
      insertDefault.run(
        row.id,
        row.schedule,
        row.enabled,
        row.jitter_ms,
        row.settings,
        row.updated_at,
      );
    },
    get(id: string): TaskRow | undefined {
      return one.get(id) as TaskRow | undefined;
    },
    update(row: TaskRow): void {
      update.run(
        row.schedule,
        row.enabled,
        row.jitter_ms,
        row.settings,
        row.next_run_at,
        row.updated_at,
        row.id,
      );
    },
    setNext(id: string, at: number | null): void {
      setNext.run(at, id);
    },
    /** Moves the task's next run to `at` unless it is due earlier already. */
    bringForward(id: string, at: number): void {
      bringForward.run(at, id, at);
    },
    /**
     * Records a run's start; returns its id. `detail`: what the row holds until the run's end
     * writes its own (on several controllers, the controller running it).
     */
    started(
      taskId: string,
      trigger: string,
      actor: string | null,
      at: number,
      detail: string | null = null,
    ): number {
      return Number(start.run(taskId, trigger, actor, at, detail).lastInsertRowid);
    },
    /** Records a run's end and keeps only the newest runs of the task. */
    finished(
      id: number,
      taskId: string,
      r: {
        at: number;
        result: "ok" | "error";
        durationMs: number;
        error: string | null;
        detail: string | null;
      },
    ): void {
      finish.run(r.at, r.result, r.durationMs, r.error, r.detail, id);
      prune.run(taskId, taskId, keepRuns);
    },
    /** Marks runs a stopped process left `running` as failed. */
    interrupted(at: number): number {
      return Number(interrupted.run(at, INTERRUPTED).changes);
    },
    /** Marks one run left `running` as failed (its controller is gone); false if it ended. */
    interruptedRun(id: number, at: number): boolean {
      return Number(interruptedOne.run(at, INTERRUPTED, id).changes) === 1;
    },
    /** The runs still `running`, of one task or (null) of every task, oldest first. */
    running(taskId: string | null): RunRow[] {
      const rows = taskId === null ? runningAll.all() : runningOf.all(taskId);
      return rows as unknown as RunRow[];
    },
    run(id: number): RunRow | undefined {
      return oneRun.get(id) as RunRow | undefined;
    },
    last(taskId: string): RunRow | undefined {
      return last.get(taskId) as RunRow | undefined;
    },
    /** The newest runs first; `before` pages by run id. */
    runs(taskId: string, limit: number, before?: number): RunRow[] {
      const b = before ?? null;
      return runs.all(taskId, b, b, limit) as unknown as RunRow[];
    },
  };
}

export type OpsTasksRepo = ReturnType<typeof createOpsTasksRepo>;
