/**
 * The lockout's counts in the management store (db/lockout_repo.ts), shared by every controller
 * of a deployment: a failure counted on one is counted on all, so two controllers behind a load
 * balancer give an attacker the attempts of one. Keys are stored as their SHA-256 (no username
 * or address in the rows), each failure is a read and a write under the store's write lock, and
 * the maintenance sweep deletes entries whose window and lock have passed.
 *
 * What this controller learned of a key stays in memory as a fast path, used only where it cannot
 * be weaker than the store: a lock it saw is refused until it ends without asking the store
 * (another controller's failures only lengthen it), and a ceiling it saw reached stays reached
 * for that window. A reset on another controller (a success, which a locked key cannot have on
 * this one) is therefore seen here only when the lock this controller knows of ends.
 */
import { LOCKOUT_PREFIX } from "../../db/lockout_repo.ts";
import type { Clock } from "../core/clock.ts";
import { sha256Hex } from "../core/digest.ts";
import {
  bound,
  failedOnce,
  liveEntry,
  type Lockout,
  type LockoutEntry,
  type LockoutOptions,
} from "./lockout_counts.ts";

/** Where the shared counts are kept (db/lockout_repo.ts on the management store). */
export interface LockoutStore {
  get(key: string): LockoutEntry | undefined;
  put(key: string, entry: LockoutEntry): void;
  delete(key: string): void;
  purge(prefix: string, before: number): number;
  atomically<T>(fn: () => T): T;
}

export interface SharedLockout {
  readonly store: LockoutStore;
  /** Names this lockout's keys apart from the others' (`login.pair`, `totp`, ...). */
  readonly scope: string;
}

export function createSharedLockout(
  clock: Clock,
  options: LockoutOptions,
  shared: SharedLockout,
): Lockout {
  const { store } = shared;
  const prefix = `${LOCKOUT_PREFIX}${shared.scope}.`;
  const rowKey = (key: string) => prefix + sha256Hex(key);
  const seen = new Map<string, LockoutEntry>();
  const maxKeys = options.maxKeys ?? 100_000;
  // A row older than this has passed both its window and its longest lock.
  const lifetime = Math.max(options.windowMs, options.maxLockMs);

  const remember = (row: string, e: LockoutEntry | undefined) => {
    seen.delete(row);
    if (!e) return;
    bound(seen, maxKeys);
    seen.set(row, e);
  };
  const known = (row: string, now: number) => {
    const e = liveEntry(seen.get(row), now, options);
    if (!e) seen.delete(row);
    return e;
  };
  const read = (row: string, now: number) => {
    const e = liveEntry(store.get(row), now, options);
    remember(row, e);
    return e;
  };

  return {
    retryAfter(keys) {
      const now = clock.now();
      let wait = 0;
      for (const k of keys) {
        const row = rowKey(k);
        const local = known(row, now);
        const e = local && local.lockedUntil > now ? local : read(row, now);
        if (e && e.lockedUntil > now) wait = Math.max(wait, e.lockedUntil - now);
      }
      return Math.ceil(wait / 1000);
    },
    failures: (key) => read(rowKey(key), clock.now())?.failures ?? 0,
    atLeast(key, n) {
      const row = rowKey(key);
      const now = clock.now();
      if ((known(row, now)?.failures ?? 0) >= n) return true;
      return (read(row, now)?.failures ?? 0) >= n;
    },
    fail(keys) {
      return store.atomically(() => {
        const now = clock.now();
        return keys.map((k) => {
          const row = rowKey(k);
          const next = failedOnce(liveEntry(store.get(row), now, options), now, options);
          store.put(row, next);
          remember(row, next);
          return next.failures;
        });
      });
    },
    reset(key) {
      const row = rowKey(key);
      store.delete(row);
      seen.delete(row);
    },
    sweep() {
      const now = clock.now();
      store.atomically(() => store.purge(prefix, now - lifetime));
      for (const row of [...seen.keys()]) known(row, now);
    },
  };
}
