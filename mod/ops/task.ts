/**
 * A scheduled task: what the scheduler is given (its definition), what an update may change,
 * and how its stored row and runs read back (settings, due time, views).
 */
import { z } from "zod";
import type { RunRow, TaskRow } from "../../db/ops_tasks_repo.ts";
import { badRequest } from "../core/errors.ts";
import { type Schedule, scheduleInput } from "./schedule.ts";

/** What a run is given. */
export interface RunContext<S> {
  readonly settings: S;
  readonly trigger: "schedule" | "manual";
}

export interface TaskDef<S = Record<string, unknown>> {
  readonly id: string;
  readonly title: string;
  readonly description: string;
  readonly schedule: Schedule;
  /** Random delay added to each scheduled run, up to this many ms (default 0). */
  readonly jitterMs?: number;
  readonly enabled?: boolean;
  /**
   * Also runs at every start (retention, the certificate check, time sync): the run begins in
   * `start()`, whatever the stored next run says, unless the task is disabled.
   */
  readonly runAtStart?: boolean;
  /** The task's own settings, with their defaults (validated on update). */
  readonly settings?: z.ZodType<S>;
  /**
   * Where the task acts. `deployment` (the default): shared state or the outside world, so one
   * controller of the deployment runs each due time (the one holding the task's lease).
   * `controller`: this process's own host or files (its clock, its local access log), so every
   * controller runs it on a schedule of its own.
   */
  readonly scope?: "deployment" | "controller";
  /** An earlier deadline the task itself asks for (the token cleanup's sliding deadline). */
  readonly dueAt?: () => number | undefined;
  /** Does the work; what it returns is kept as the run's detail. Throws on failure. */
  run(ctx: RunContext<S>): Promise<Record<string, unknown> | void> | Record<string, unknown> | void;
}

const MAX_JITTER_MS = 24 * 3_600_000;

export const iso = (t: number | null | undefined) =>
  t === null || t === undefined || !Number.isFinite(t) ? null : new Date(t).toISOString();

export function runView(r: RunRow) {
  return {
    id: r.id,
    task: r.task_id,
    trigger: r.trigger,
    actor: r.actor,
    started_at: iso(r.started_at),
    finished_at: iso(r.finished_at),
    result: r.result,
    duration_ms: r.duration_ms,
    error: r.error,
    detail: r.detail === null ? null : JSON.parse(r.detail) as Record<string, unknown>,
  };
}

export type RunView = ReturnType<typeof runView>;

export interface TaskUpdate {
  readonly schedule?: Schedule;
  readonly enabled?: boolean;
  readonly jitter_ms?: number;
  readonly settings?: Record<string, unknown>;
}

export const taskUpdateInput = z.strictObject({
  schedule: scheduleInput.optional(),
  enabled: z.boolean().optional(),
  jitter_ms: z.number().int().min(0).max(MAX_JITTER_MS).optional(),
  settings: z.record(z.string(), z.unknown()).optional(),
});

export function schedulingOf(r: TaskRow): Schedule {
  return JSON.parse(r.schedule) as Schedule;
}

export function settingsOf(d: TaskDef<unknown>, r: TaskRow): unknown {
  const stored = JSON.parse(r.settings) as Record<string, unknown>;
  if (!d.settings) return stored;
  const parsed = d.settings.safeParse(stored);
  // Stored settings a newer build no longer accepts fall back to the defaults.
  return parsed.success ? parsed.data : d.settings.parse({});
}

/** When the task is due next: its persisted run or its own earlier deadline. */
export function dueOf(d: TaskDef<unknown>, r: TaskRow): number | null {
  if (!r.enabled) return null;
  const own = d.dueAt?.();
  if (own === undefined) return r.next_run_at;
  return r.next_run_at === null ? own : Math.min(own, r.next_run_at);
}

/** The stored settings with `patch` merged in, validated against the task's schema. */
export function patchedSettings(
  d: TaskDef<unknown>,
  r: TaskRow,
  patch: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const settings = JSON.parse(r.settings) as Record<string, unknown>;
  if (patch === undefined) return settings;
  const merged = { ...settings, ...patch };
  if (!d.settings) {
    throw badRequest(`Task "${d.id}" has no settings`, "settings");
  }
  const parsed = d.settings.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = ["settings", ...issue.path.map(String)].join(".");
    throw badRequest(`Invalid field "${field}": ${issue.message}`, field);
  }
  return parsed.data as Record<string, unknown>;
}
