/**
 * Failure counting with exponential backoff, keyed by whatever the caller limits on (a client
 * address, a username, the setup token). Counts live in process memory: they reset on restart,
 * which the CAPTCHA and the slow password hash make acceptable for a single-node console.
 */
import type { Clock } from "../core/clock.ts";

export interface LockoutOptions {
  /** Failures allowed inside `windowMs` before the first lock. */
  readonly threshold: number;
  /** First lock length; each further failure doubles it, up to `maxLockMs`. */
  readonly baseLockMs: number;
  readonly maxLockMs: number;
  /** A key with no failure for this long starts again from zero. */
  readonly windowMs: number;
  /** Keys kept at most (oldest dropped first), so a flood cannot exhaust memory. */
  readonly maxKeys?: number;
}

interface Entry {
  failures: number;
  lastFailure: number;
  lockedUntil: number;
}

export function createLockout(clock: Clock, options: LockoutOptions) {
  const entries = new Map<string, Entry>();
  const maxKeys = options.maxKeys ?? 100_000;

  const live = (key: string): Entry | undefined => {
    const e = entries.get(key);
    if (!e) return undefined;
    const now = clock.now();
    if (now - e.lastFailure > options.windowMs && now >= e.lockedUntil) {
      entries.delete(key);
      return undefined;
    }
    return e;
  };

  return {
    /** Seconds until every key in `keys` may try again; 0 when none is locked. */
    retryAfter(keys: readonly string[]): number {
      const now = clock.now();
      let wait = 0;
      for (const k of keys) {
        const e = live(k);
        if (e && e.lockedUntil > now) wait = Math.max(wait, e.lockedUntil - now);
      }
      return Math.ceil(wait / 1000);
    },
    /** Failures counted for `key` in the current window. */
    failures(key: string): number {
      return live(key)?.failures ?? 0;
    },
    /** Counts one failure against each key; locks a key once it passes the threshold. */
    fail(keys: readonly string[]): void {
      const now = clock.now();
      for (const k of keys) {
        let e = live(k);
        if (!e) {
          if (entries.size >= maxKeys) {
            const oldest = entries.keys().next().value;
            if (oldest !== undefined) entries.delete(oldest);
          }
          e = { failures: 0, lastFailure: now, lockedUntil: 0 };
          entries.set(k, e);
        }
        e.failures++;
        e.lastFailure = now;
        const over = e.failures - options.threshold;
        if (over >= 0) {
          const lock = Math.min(options.maxLockMs, options.baseLockMs * 2 ** Math.min(over, 30));
          e.lockedUntil = now + lock;
        }
      }
    },
    /** Forgets `key` (after a success). */
    reset(key: string): void {
      entries.delete(key);
    },
    /** Drops entries whose window and lock have both passed. */
    sweep(): void {
      for (const k of [...entries.keys()]) live(k);
    },
  };
}

export type Lockout = ReturnType<typeof createLockout>;
