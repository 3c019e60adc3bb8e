/**
 * SQL for two-factor state beyond `users_repo`'s enable/disable: the pending (not yet
 * confirmed) secret of a setup, kept sealed in `settings` under `totp.pending.<user id>`, the
 * recovery codes (their keyed hashes only) under `totp.recovery.<user id>`, and the last accepted
 * time step, advanced only forwards so a code is accepted once. The `settings` table holds JSON
 * per key, so neither needs a schema version of its own.
 */
import { createSettingsRepo } from "./settings_repo.ts";
import type { Db } from "./store.ts";

const PREFIX = "totp.pending.";
const RECOVERY = "totp.recovery.";

export interface PendingTotp {
  /** The sealed secret (never the plain one). */
  readonly secret_enc: string;
  readonly expires_at: number;
}

/** One recovery code of a set: its hash, and when it was spent (null while it is unused). */
export interface RecoveryCodeHash {
  readonly hash: string;
  readonly used_at: number | null;
}

/** An account's current set of recovery codes. */
export interface RecoverySet {
  readonly created_at: number;
  readonly codes: readonly RecoveryCodeHash[];
}

export function createTotpRepo(db: Db) {
  const settings = createSettingsRepo(db);
  const sweep = db.prepare(
    `DELETE FROM settings WHERE key LIKE '${PREFIX}%'
       AND json_extract(value, '$.expires_at') <= ?`,
  );
  // One statement compares and advances, so two requests racing with the same code cannot
  // both win.
  const accept = db.prepare(
    `UPDATE users SET totp_last_step = :step
     WHERE id = :id AND (totp_last_step IS NULL OR totp_last_step < :step)`,
  );
  return {
    getPending(userId: string): PendingTotp | undefined {
      return settings.get(PREFIX + userId) as PendingTotp | undefined;
    },
    putPending(userId: string, pending: PendingTotp, now: number): void {
      settings.set(PREFIX + userId, pending, now);
    },
    deletePending(userId: string): void {
      settings.delete(PREFIX + userId);
    },
    /** Deletes every pending setup that expired at or before `now`; returns how many. */
    sweepPending(now: number): number {
      return Number(sweep.run(now).changes);
    },
    getRecovery(userId: string): RecoverySet | undefined {
      return settings.get(RECOVERY + userId) as RecoverySet | undefined;
    },
    /** Replaces the account's set (a new one invalidates every code of the old). */
    putRecovery(userId: string, set: RecoverySet, now: number): void {
      settings.set(RECOVERY + userId, set, now);
    },
    deleteRecovery(userId: string): void {
      settings.delete(RECOVERY + userId);
    },
    /** Records `step` as accepted; false when that step or a later one already was (a replay). */
    acceptStep(userId: string, step: number): boolean {
      return Number(accept.run({ id: userId, step }).changes) > 0;
    },
  };
}

export type TotpRepo = ReturnType<typeof createTotpRepo>;
