/**
 * What both lockouts share (lockout.ts in memory, shared_lockout.ts in the store): the options,
 * the interface, and how one failure changes a key's count.
 */

export interface LockoutOptions {
  /** Failures allowed inside `windowMs` before the first lock. */
  readonly threshold: number;
  /** First lock length; each further failure doubles it, up to `maxLockMs`. */
  readonly baseLockMs: number;
  readonly maxLockMs: number;
  /** A key with no failure for this long starts again from zero. */
  readonly windowMs: number;
  /** Keys kept in memory at most (oldest dropped first), so a flood cannot exhaust memory. */
  readonly maxKeys?: number;
}

/** One key's count. */
export interface LockoutEntry {
  readonly failures: number;
  readonly lastFailure: number;
  readonly lockedUntil: number;
}

export interface Lockout {
  /** Seconds until every key in `keys` may try again; 0 when none is locked. */
  retryAfter(keys: readonly string[]): number;
  /** Failures counted for `key` in the current window. */
  failures(key: string): number;
  /** Whether `key` has at least `n` failures in the current window. */
  atLeast(key: string, n: number): boolean;
  /**
   * Counts one failure against each key, locking a key once it passes the threshold; the
   * failures of each key, this one included.
   */
  fail(keys: readonly string[]): readonly number[];
  /** Forgets `key` (after a success). */
  reset(key: string): void;
  /** Drops entries whose window and lock have both passed. */
  sweep(): void;
}

/** `e` unless both its window and its lock have passed at `now`. */
export function liveEntry(
  e: LockoutEntry | undefined,
  now: number,
  options: LockoutOptions,
): LockoutEntry | undefined {
  return e && (now - e.lastFailure <= options.windowMs || now < e.lockedUntil) ? e : undefined;
}

/** `e` (undefined: none live) after one more failure at `now`. */
export function failedOnce(
  e: LockoutEntry | undefined,
  now: number,
  options: LockoutOptions,
): LockoutEntry {
  const failures = (e?.failures ?? 0) + 1;
  const over = failures - options.threshold;
  const lockedUntil = over >= 0
    ? now + Math.min(options.maxLockMs, options.baseLockMs * 2 ** Math.min(over, 30))
    : e?.lockedUntil ?? 0;
  return { failures, lastFailure: now, lockedUntil };
}

/** Keeps `map` under `max` entries, dropping the oldest. */
export function bound<V>(map: Map<string, V>, max: number): void {
  while (map.size >= max) {
    const oldest = map.keys().next().value;
    if (oldest === undefined) return;
    map.delete(oldest);
  }
}
