/**
 * Failure counting with exponential backoff, keyed by whatever the caller limits on (a client
 * address, a username, the setup token). Given the store (`shared`), the counts are the
 * deployment's (shared_lockout.ts): every controller on one store counts the same failures, so
 * a load balancer spreading an attacker's attempts gains nothing. Without it (unit tests) they
 * live in this process's memory.
 */
import type { Clock } from "../core/clock.ts";
import {
  bound,
  failedOnce,
  liveEntry,
  type Lockout,
  type LockoutEntry,
  type LockoutOptions,
} from "./lockout_counts.ts";
import { createSharedLockout, type SharedLockout } from "./shared_lockout.ts";

export type { Lockout, LockoutOptions } from "./lockout_counts.ts";
export type { LockoutStore, SharedLockout } from "./shared_lockout.ts";

export function createLockout(
  clock: Clock,
  options: LockoutOptions,
  shared?: SharedLockout,
): Lockout {
  if (shared) return createSharedLockout(clock, options, shared);
  const entries = new Map<string, LockoutEntry>();
  const maxKeys = options.maxKeys ?? 100_000;

  const live = (key: string): LockoutEntry | undefined => {
    const e = liveEntry(entries.get(key), clock.now(), options);
    if (!e) entries.delete(key);
    return e;
  };

  return {
    retryAfter(keys) {
      const now = clock.now();
      let wait = 0;
      for (const k of keys) {
        const e = live(k);
        if (e && e.lockedUntil > now) wait = Math.max(wait, e.lockedUntil - now);
      }
      return Math.ceil(wait / 1000);
    },
    failures: (key) => live(key)?.failures ?? 0,
    atLeast: (key, n) => (live(key)?.failures ?? 0) >= n,
    fail(keys) {
      const now = clock.now();
      return keys.map((k) => {
        const e = live(k);
        if (!e) bound(entries, maxKeys);
        const next = failedOnce(e, now, options);
        entries.set(k, next);
        return next.failures;
      });
    },
    reset(key) {
      entries.delete(key);
    },
    sweep() {
      for (const k of [...entries.keys()]) live(k);
    },
  };
}
