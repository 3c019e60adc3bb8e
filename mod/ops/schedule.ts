/**
 * A task's schedule: an interval or a cron expression (evaluated by croner in UTC), as the API
 * takes it and as it is stored, and when it runs next.
 */
import { Cron } from "croner";
import { z } from "zod";
import { AppError, badRequest } from "../core/errors.ts";

export type Schedule = { readonly every_ms: number } | { readonly cron: string };

const MIN_INTERVAL_MS = 1_000;

/** A schedule as the API takes it: `{ "every": "10m" }`, `{ "every_ms": 600000 }` or `{ "cron": "..." }`. */
export const scheduleInput = z.union([
  z.strictObject({ cron: z.string().min(1).max(120) }),
  z.strictObject({ every: z.string().regex(/^\d+(ms|s|m|h|d)$/, "a duration like 90s, 10m, 6h") }),
  z.strictObject({ every_ms: z.number().int().min(MIN_INTERVAL_MS).max(366 * 86_400_000) }),
]);

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Normalises an API schedule; a bad cron expression is a 400 naming `schedule.cron`. */
export function toSchedule(input: z.infer<typeof scheduleInput>): Schedule {
  if ("cron" in input) {
    cronOf(input.cron);
    return { cron: input.cron.trim() };
  }
  if ("every_ms" in input) return { every_ms: input.every_ms };
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(input.every)!;
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  if (ms < MIN_INTERVAL_MS) {
    throw badRequest(`Invalid field "schedule.every": at least 1s`, "schedule.every");
  }
  return { every_ms: ms };
}

function cronOf(expression: string): Cron {
  try {
    return new Cron(expression.trim(), { paused: true, timezone: "UTC" });
  } catch (err) {
    throw new AppError(
      400,
      "BAD_REQUEST",
      `Invalid field "schedule.cron": ${(err as Error).message}`,
      { details: { field: "schedule.cron" } },
    );
  }
}

/** The first run of `schedule` strictly after `from` (ms since the epoch). */
export function nextAfter(schedule: Schedule, from: number): number {
  if ("every_ms" in schedule) return from + schedule.every_ms;
  const next = cronOf(schedule.cron).nextRun(new Date(from));
  // An expression that never matches again (a past year) leaves the task without a next run.
  return next === null ? Number.POSITIVE_INFINITY : next.getTime();
}

export function describeSchedule(schedule: Schedule): string {
  if ("cron" in schedule) return `cron "${schedule.cron}" (UTC)`;
  const ms = schedule.every_ms;
  for (
    const [unit, n] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const
  ) {
    if (ms % n === 0) return `every ${ms / n}${unit}`;
  }
  return `every ${ms}ms`;
}
