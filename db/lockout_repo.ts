/**
 * SQL for the shared lockout counts (mod/identity/shared_lockout.ts): one `settings` row per
 * counted key, `lockout.<scope>.<SHA-256 of the key>`, holding its failures, last failure and
 * lock end, with `updated_at` the last failure (what the sweep deletes by). The `settings` table
 * holds JSON per key, so the counts need no schema version of their own, and every controller of
 * a deployment reads and writes the same rows.
 */
import { type Db, NO_CHANGE_NOTICE, transaction } from "./store.ts";

/** One key's failures, as the lockout counts them. */
export interface LockoutEntry {
  readonly failures: number;
  readonly lastFailure: number;
  readonly lockedUntil: number;
}

interface Stored {
  readonly failures: number;
  readonly last_failure: number;
  readonly locked_until: number;
}

export const LOCKOUT_PREFIX = "lockout.";

export function createLockoutRepo(db: Db) {
  const get = db.prepare("SELECT value FROM settings WHERE key = ?");
  // Counts are read back when needed: no other controller is told of each failure.
  const put = db.prepare(
    `${NO_CHANGE_NOTICE} INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  );
  const del = db.prepare(`${NO_CHANGE_NOTICE} DELETE FROM settings WHERE key = ?`);
  const purge = db.prepare(
    `${NO_CHANGE_NOTICE} DELETE FROM settings WHERE substr(key, 1, length(?)) = ? AND updated_at < ?`,
  );
  return {
    /** The entry under `key` (a full settings key), or undefined. */
    get(key: string): LockoutEntry | undefined {
      const row = get.get(key) as { value: string } | undefined;
      if (!row) return undefined;
      const v = JSON.parse(row.value) as Stored;
      return { failures: v.failures, lastFailure: v.last_failure, lockedUntil: v.locked_until };
    },
    put(key: string, e: LockoutEntry): void {
      const value: Stored = {
        failures: e.failures,
        last_failure: e.lastFailure,
        locked_until: e.lockedUntil,
      };
      put.run(key, JSON.stringify(value), e.lastFailure);
    },
    delete(key: string): void {
      del.run(key);
    },
    /** Deletes the entries under `prefix` whose last failure is before `before`; how many. */
    purge(prefix: string, before: number): number {
      return Number(purge.run(prefix, prefix, before).changes);
    },
    /**
     * Runs `fn` under the store's write lock (inside a caller's transaction, as part of it), so
     * a read and the write that follows it are one step for every controller.
     */
    atomically<T>(fn: () => T): T {
      return db.isTransaction ? fn() : transaction(db, fn);
    },
  };
}

export type LockoutRepo = ReturnType<typeof createLockoutRepo>;
