/**
 * Turning two-factor authentication on: a setup with a pending secret (sealed, expiring after 10
 * minutes), then enable with a current code for it, which turns 2FA on with a new set of recovery
 * codes in one transaction. The credential epoch advances, so the account's sessions end, except
 * the one the caller asks to keep (the owner's own, which has just proved both factors): it moves
 * to the new epoch with the account, but only from the epoch it was checked at.
 */
import type { TotpRepo } from "../../db/totp_repo.ts";
import type { UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Random } from "../core/random.ts";
import type { SecretBox } from "../core/secret_box.ts";
import { qrSvgDataUri } from "./qr.ts";
import {
  newTotpSecret,
  TOTP_ALGORITHM,
  TOTP_DIGITS,
  TOTP_PERIOD_MS,
  totpBase32,
  totpUri,
} from "./totp.ts";
import { codeKey, invalidCode, type TwoFactorChecks } from "./two_factor_checks.ts";
import type { TwoFactorRecovery } from "./two_factor_recovery.ts";
import { type PublicUser, toPublicUser } from "./users.ts";

type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

/** How long a setup waits for its confirming code. */
export const PENDING_TTL_MS = 10 * 60_000;
/** The issuer an authenticator app shows next to the account name. */
export const TOTP_ISSUER = "waf";

/** What turning 2FA on answers: the account, its recovery codes (shown this once). */
export interface Enabled {
  readonly user: PublicUser;
  readonly recovery_codes: readonly string[];
  /** Whether the session that asked stays signed in (the owner's own); every other ends. */
  readonly session_kept: boolean;
}

export interface TwoFactorSetup {
  readonly otpauth_uri: string;
  /** Base32, for typing into an authenticator that cannot scan. */
  readonly secret: string;
  /** `data:image/svg+xml;base64,...` QR code of `otpauth_uri`. */
  readonly qr_code: string;
  readonly algorithm: typeof TOTP_ALGORITHM;
  readonly digits: number;
  readonly period: number;
  readonly expires_at: string;
}

export interface TwoFactorOnDeps {
  readonly users: UsersRepo;
  readonly totp: TotpRepo;
  readonly box: SecretBox;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  readonly transaction: <T>(fn: () => T) => T;
}

/** Setup and enable, on the shared checks and the recovery codes. */
export class TwoFactorOn {
  readonly #deps: TwoFactorOnDeps;
  readonly #checks: TwoFactorChecks;
  readonly #recovery: TwoFactorRecovery;

  constructor(deps: TwoFactorOnDeps, checks: TwoFactorChecks, recovery: TwoFactorRecovery) {
    this.#deps = deps;
    this.#checks = checks;
    this.#recovery = recovery;
  }

  /** A new pending secret (replacing any earlier one) for `row`, which has 2FA off. */
  async setup(row: UserRow, ctx: AuditContext): Promise<TwoFactorSetup> {
    const deps = this.#deps;
    if (row.totp_enabled) {
      throw new AppError(
        409,
        "TOTP_ALREADY_ENABLED",
        "Two-factor authentication is already enabled: disable it before binding a new device",
      );
    }
    const now = deps.clock.now();
    const secret = newTotpSecret(deps.random);
    const sealed = await deps.box.seal(secret, row.id);
    const expiresAt = now + PENDING_TTL_MS;
    deps.transaction(() => {
      deps.totp.sweepPending(now);
      deps.totp.putPending(row.id, { secret_enc: sealed, expires_at: expiresAt }, now);
      deps.audit.record({
        ...ctx,
        action: "user.2fa.setup",
        target: `user:${row.id}`,
        result: "success",
        detail: { expires_at: new Date(expiresAt).toISOString() },
      });
    });
    const uri = totpUri(secret, TOTP_ISSUER, row.username);
    return {
      otpauth_uri: uri,
      secret: totpBase32(secret),
      qr_code: await qrSvgDataUri(uri),
      algorithm: TOTP_ALGORITHM,
      digits: TOTP_DIGITS,
      period: TOTP_PERIOD_MS / 1000,
      expires_at: new Date(expiresAt).toISOString(),
    };
  }

  /**
   * Turns 2FA on for `row` with a code for its pending secret, with a new set of recovery codes;
   * the session `keep` (a hash), when given, moves to the new credential epoch with the account.
   */
  async enable(
    row: UserRow,
    code: string,
    keep: string | undefined,
    ctx: AuditContext,
  ): Promise<Enabled> {
    const deps = this.#deps;
    const checks = this.#checks;
    if (row.totp_enabled) {
      throw new AppError(409, "TOTP_ALREADY_ENABLED", "Two-factor authentication is enabled");
    }
    const pending = deps.totp.getPending(row.id);
    if (!pending || pending.expires_at <= deps.clock.now()) {
      throw new AppError(
        409,
        "TOTP_SETUP_REQUIRED",
        `No pending two-factor setup (or it expired): start again with POST /api/users/${row.id}/2fa/setup`,
      );
    }
    checks.assertNotLocked([codeKey(row.id)]);
    const secret = await checks.openSecret(pending.secret_enc, row.id);
    if (!secret) throw invalidCode();
    const step = checks.matchCode(secret, row.id, code);
    const recovery = await this.#recovery.prepare(row.id);
    const kept = deps.transaction(() => {
      deps.users.setTotp(row.id, pending.secret_enc, deps.clock.now());
      // The asking session has just proved both factors: it moves to the new epoch with the
      // account, but only from the epoch it was checked at, so it never outlives another change.
      const carried = keep !== undefined &&
        deps.users.carrySession(keep, row.id, row.credential_epoch);
      // The confirming code is spent: it cannot also sign in.
      deps.totp.acceptStep(row.id, step);
      deps.totp.deletePending(row.id);
      this.#recovery.store(row.id, recovery.set);
      deps.audit.record({
        ...ctx,
        action: "user.2fa.enable",
        target: `user:${row.id}`,
        result: "success",
        detail: { recovery_codes: recovery.codes.length, session_kept: carried },
      });
      return carried;
    });
    checks.lockout.reset(codeKey(row.id));
    return {
      user: toPublicUser(checks.account(row.id)),
      recovery_codes: recovery.codes,
      session_kept: kept,
    };
  }
}
