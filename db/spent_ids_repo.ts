/**
 * One-time ids spent across the deployment (the login CAPTCHA's challenges and receipts): one
 * `settings` row per spent id, `spent.<kind>.<id>`, its `updated_at` the id's expiry (what the
 * sweep deletes by). Every controller of a deployment reads and writes the same rows, so an id
 * spent on one is spent on all, and a restart forgets none. The ids are random (never secrets):
 * stored as given. The writes send no change notice: no other controller reacts to them.
 */
import { type Db, NO_CHANGE_NOTICE } from "./store.ts";

const PREFIX = "spent.";

export function createSpentIdsRepo(db: Db) {
  const spend = db.prepare(
    `${NO_CHANGE_NOTICE} INSERT INTO settings (key, value, updated_at) VALUES (?, '1', ?)
     ON CONFLICT(key) DO NOTHING`,
  );
  const purge = db.prepare(
    `${NO_CHANGE_NOTICE} DELETE FROM settings WHERE substr(key, 1, length(?)) = ? AND updated_at <= ?`,
  );
  return {
    /** Spends `id` of `kind` until `expiresAt`: true the first time, false when already spent. */
    spend(kind: string, id: string, expiresAt: number): boolean {
      return Number(spend.run(`${PREFIX}${kind}.${id}`, expiresAt).changes) === 1;
    },
    /** Forgets the ids of `kind` expired at `now`; how many. */
    sweep(kind: string, now: number): number {
      const prefix = `${PREFIX}${kind}.`;
      return Number(purge.run(prefix, prefix, now).changes);
    },
  };
}

export type SpentIdsRepo = ReturnType<typeof createSpentIdsRepo>;
