/** Durations as configuration writes them: a whole number and a unit (`500ms`, `10s`, `1m`). */

/** What a duration is, for every message about one. */
export const DURATION_HELP =
  'a whole number followed by a unit: ms (milliseconds), s (seconds), m (minutes), h (hours) or d (days), with no space, e.g. "10s", "5m", "1h"';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a validated duration string such as `"10s"`. */
export function durationMs(value: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(value);
  if (!m) throw new Error(`Invalid duration: "${value}"`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}
