/**
 * Recovery codes of two-factor authentication: a set of ten is issued whenever 2FA is turned on
 * (shown once), each signs in once instead of a code from the app, and a new set (confirmed with
 * the caller's password) invalidates the old one. The store keeps only keyed hashes
 * (`recovery_codes.ts`), in the `settings` table beside the pending setup (`totp_repo.ts`); turning
 * 2FA off deletes the set. Wrong codes count toward the same lockout as wrong TOTP codes.
 */
import type { RecoverySet, TotpRepo } from "../../db/totp_repo.ts";
import type { UserRow } from "../../db/users_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { safeEqual } from "../core/digest.ts";
import type { Logger } from "../core/logger.ts";
import type { Notifications } from "../core/notifications.ts";
import type { Random } from "../core/random.ts";
import type { TotpCheck } from "./login_second_factor.ts";
import { newRecoveryCodes, normalizeRecoveryCode, recoveryHash } from "./recovery_codes.ts";
import { codeKey, notEnabled, passwordKey, type TwoFactorChecks } from "./two_factor_checks.ts";

type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

/** What `GET /api/users/{id}/2fa/recovery-codes` answers: counts and age, never a code. */
export interface RecoveryStatus {
  readonly totp_enabled: boolean;
  readonly total: number;
  readonly remaining: number;
  readonly created_at: string | null;
}

/** A set just made: the codes, shown this once, beside its status. */
export interface IssuedCodes extends RecoveryStatus {
  readonly recovery_codes: readonly string[];
}

export interface TwoFactorRecoveryDeps {
  readonly totp: TotpRepo;
  readonly audit: Audit;
  readonly notifications: Notifications;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly transaction: <T>(fn: () => T) => T;
  /** The key codes are hashed under (derived from `<data-dir>/totp.key`). */
  readonly recoveryKey: () => Promise<Uint8Array>;
}

/** Issues, counts, regenerates and spends recovery codes. */
export class TwoFactorRecovery {
  readonly #deps: TwoFactorRecoveryDeps;
  readonly #checks: TwoFactorChecks;

  constructor(deps: TwoFactorRecoveryDeps, checks: TwoFactorChecks) {
    this.#deps = deps;
    this.#checks = checks;
  }

  /** A new set for `userId`: the codes to show and the hashes to store (with `store`). */
  async prepare(userId: string): Promise<{ codes: string[]; set: RecoverySet }> {
    const key = await this.#deps.recoveryKey();
    const codes = newRecoveryCodes(this.#deps.random);
    const codesHashed = codes.map((c) => ({
      hash: recoveryHash(key, userId, normalizeRecoveryCode(c)!),
      used_at: null,
    }));
    return { codes, set: { created_at: this.#deps.clock.now(), codes: codesHashed } };
  }

  /** Stores a prepared set, replacing the account's old one; call inside a transaction. */
  store(userId: string, set: RecoverySet): void {
    this.#deps.totp.putRecovery(userId, set, this.#deps.clock.now());
  }

  /** Counts of the account's set; zero while 2FA is off (a stale set never counts). */
  status(row: UserRow): RecoveryStatus {
    const set = row.totp_enabled ? this.#deps.totp.getRecovery(row.id) : undefined;
    return {
      totp_enabled: row.totp_enabled === 1,
      total: set?.codes.length ?? 0,
      remaining: set?.codes.filter((c) => c.used_at === null).length ?? 0,
      created_at: set ? new Date(set.created_at).toISOString() : null,
    };
  }

  /**
   * A new set for `target`, confirmed by `actor`'s own password (the owner's, or an
   * administrator's acting on another account, who is then reported to the other administrators).
   */
  async regenerate(
    actor: UserRow,
    target: UserRow,
    password: string,
    ctx: AuditContext,
  ): Promise<IssuedCodes> {
    const deps = this.#deps;
    const checks = this.#checks;
    if (!target.totp_enabled) throw notEnabled();
    checks.assertNotLocked([passwordKey(actor.id)]);
    await checks.checkPassword(actor, password);
    const { codes, set } = await this.prepare(target.id);
    deps.transaction(() => {
      this.store(target.id, set);
      deps.audit.record({
        ...ctx,
        action: "user.2fa.recovery_codes.regenerate",
        target: `user:${target.id}`,
        result: "success",
        detail: { recovery_codes: codes.length },
      });
      if (actor.id !== target.id) {
        deps.notifications.notifyAdmins({
          level: "warning",
          kind: "user.2fa.recovery_codes.regenerate",
          title: `New recovery codes made for ${target.username}`,
          body:
            `${actor.username} made a new set of two-factor recovery codes for ${target.username} (${target.id}); the old set no longer works.`,
        });
      }
    });
    checks.lockout.reset(passwordKey(actor.id));
    return { ...this.status(checks.account(target.id)), recovery_codes: codes };
  }

  /** The login check: an unused code of the account's set, spent by the check. */
  async verifyLogin(user: UserRow, input: string): Promise<TotpCheck> {
    const deps = this.#deps;
    const lockout = this.#checks.lockout;
    const wait = lockout.retryAfter([codeKey(user.id)]);
    if (wait > 0) return { ok: false, reason: "locked", retryAfter: wait };
    const normalized = normalizeRecoveryCode(input);
    let key: Uint8Array;
    try {
      key = await deps.recoveryKey();
    } catch (err) {
      deps.logger.error("the two-factor key cannot be read", {
        user_id: user.id,
        error: err as Error,
      });
      return { ok: false, reason: "unreadable" };
    }
    const hash = normalized === undefined ? "" : recoveryHash(key, user.id, normalized);
    const outcome = deps.transaction(() => this.#spend(user.id, hash));
    if (outcome.kind !== "spent") {
      lockout.fail([codeKey(user.id)]);
      return { ok: false, reason: outcome.kind === "used" ? "replayed" : "invalid" };
    }
    lockout.reset(codeKey(user.id));
    return { ok: true, recoveryCodesLeft: outcome.remaining };
  }

  /** Marks the unused code with `hash` spent; compares with every code, matching or not. */
  #spend(
    userId: string,
    hash: string,
  ): { kind: "spent"; remaining: number } | { kind: "used" | "unknown" } {
    const totp = this.#deps.totp;
    const set = totp.getRecovery(userId);
    if (!set || hash === "") return { kind: "unknown" };
    let found = -1;
    set.codes.forEach((c, i) => {
      if (safeEqual(c.hash, hash)) found = i;
    });
    if (found < 0) return { kind: "unknown" };
    if (set.codes[found]!.used_at !== null) return { kind: "used" };
    const now = this.#deps.clock.now();
    const codes = set.codes.map((c, i) => i === found ? { ...c, used_at: now } : c);
    totp.putRecovery(userId, { ...set, codes }, now);
    return { kind: "spent", remaining: codes.filter((c) => c.used_at === null).length };
  }
}
