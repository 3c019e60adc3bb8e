/**
 * Two-factor authentication (TOTP) for accounts: setup with a pending secret that expires,
 * enable with a code for it, disable (the owner with password and code; an administrator for
 * another account with their own password, like recovery), recovery of another account, and the
 * code check at login. Who may reach which account is the route guard's decision (the owner
 * always, others with `write:users`); on another account the caller must also hold every
 * permission of its role (`assertMayManage`: no escalation through 2FA). Secrets are sealed at rest; every change advances the
 * credential epoch (sessions end); a code is accepted once; wrong codes and passwords count
 * toward a lockout. Turning 2FA off is `two_factor_off.ts`; the shared checks,
 * `two_factor_checks.ts`.
 */
import type { TotpRepo } from "../../db/totp_repo.ts";
import type { UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import { assertMayManage, type Caller } from "./account_authority.ts";
import type { Logger } from "../core/logger.ts";
import type { Notifications } from "../core/notifications.ts";
import type { Random } from "../core/random.ts";
import type { SecretBox } from "../core/secret_box.ts";
import type { Lockout } from "./lockout.ts";
import type { TotpCheck } from "./login.ts";
import type { RoleMap } from "./permissions.ts";
import { qrSvgDataUri } from "./qr.ts";
import {
  matchTotpStep,
  newTotpSecret,
  TOTP_ALGORITHM,
  TOTP_DIGITS,
  TOTP_PERIOD_MS,
  totpBase32,
  totpUri,
} from "./totp.ts";
import { codeKey, invalidCode, TwoFactorChecks } from "./two_factor_checks.ts";
import { TwoFactorOff } from "./two_factor_off.ts";
import { type PublicUser, toPublicUser } from "./users.ts";

/** How long a setup waits for its confirming code. */
export const PENDING_TTL_MS = 10 * 60_000;
/** The issuer an authenticator app shows next to the account name. */
export const TOTP_ISSUER = "waf";

export type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

/** The signed-in user acting (2FA routes are for sessions only), with their permissions. */
export interface SignedIn extends Caller {
  readonly userId: string;
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

export interface TwoFactorDeps {
  readonly users: UsersRepo;
  readonly totp: TotpRepo;
  readonly box: SecretBox;
  readonly audit: Audit;
  readonly notifications: Notifications;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly transaction: <T>(fn: () => T) => T;
  /** The configured roles, to judge whether a caller may act on another account. */
  readonly roles: RoleMap;
}

/** Two-factor authentication of accounts (what `createTwoFactor` returns). */
export interface TwoFactor {
  /** The lockout of wrong codes and passwords (keys `totp:<id>`, `password:<id>`). */
  readonly lockout: Lockout;
  /** Starts a setup: a new pending secret (replacing any earlier one) for the account. */
  setup(caller: SignedIn, userId: string, ctx: AuditContext): Promise<TwoFactorSetup>;
  /** Confirms the pending secret with a code for it and turns 2FA on. */
  enable(caller: SignedIn, userId: string, code: string, ctx: AuditContext): Promise<PublicUser>;
  /**
   * Turns 2FA off. The owner confirms with the password and a current code; an administrator
   * acting on another account confirms with their own password (as in {@link recover}).
   */
  disable(
    caller: SignedIn,
    userId: string,
    input: { password: string; code?: string },
    ctx: AuditContext,
  ): Promise<PublicUser>;
  /** An administrator turns off another account's 2FA after confirming its own password. */
  recover(
    caller: SignedIn,
    targetId: string,
    password: string,
    ctx: AuditContext,
  ): Promise<PublicUser>;
  /** The login check: a current code for the enabled secret, not used before. */
  verifyLogin(user: UserRow, code: string): Promise<TotpCheck>;
  /** Forgets expired pending setups and idle lockout entries (maintenance). */
  sweep(): void;
}

class TwoFactorService implements TwoFactor {
  readonly lockout: Lockout;
  readonly #deps: TwoFactorDeps;
  readonly #checks: TwoFactorChecks;
  readonly #off: TwoFactorOff;

  constructor(deps: TwoFactorDeps) {
    this.#deps = deps;
    this.#checks = new TwoFactorChecks(deps);
    this.#off = new TwoFactorOff(deps, this.#checks);
    this.lockout = this.#checks.lockout;
  }

  async setup(caller: SignedIn, userId: string, ctx: AuditContext): Promise<TwoFactorSetup> {
    const deps = this.#deps;
    const row = this.#account(caller, userId);
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

  async enable(
    caller: SignedIn,
    userId: string,
    code: string,
    ctx: AuditContext,
  ): Promise<PublicUser> {
    const deps = this.#deps;
    const checks = this.#checks;
    const row = this.#account(caller, userId);
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
    deps.transaction(() => {
      deps.users.setTotp(row.id, pending.secret_enc, deps.clock.now());
      // The confirming code is spent: it cannot also sign in.
      deps.totp.acceptStep(row.id, step);
      deps.totp.deletePending(row.id);
      deps.audit.record({
        ...ctx,
        action: "user.2fa.enable",
        target: `user:${row.id}`,
        result: "success",
      });
    });
    this.lockout.reset(codeKey(row.id));
    return toPublicUser(checks.account(row.id));
  }

  async disable(
    caller: SignedIn,
    userId: string,
    input: { password: string; code?: string },
    ctx: AuditContext,
  ): Promise<PublicUser> {
    if (caller.userId !== userId) {
      this.#account(caller, userId);
      return await this.#off.forOther(
        {
          actorId: caller.userId,
          targetId: userId,
          password: input.password,
          action: "user.2fa.disable",
        },
        ctx,
      );
    }
    return await this.#off.own(userId, input, ctx);
  }

  async recover(
    caller: SignedIn,
    targetId: string,
    password: string,
    ctx: AuditContext,
  ): Promise<PublicUser> {
    const actorId = caller.userId;
    if (actorId === targetId) {
      this.#checks.account(targetId);
      throw new AppError(
        403,
        "FORBIDDEN",
        "Recovery is for another account: turn off your own two-factor authentication with POST /api/users/{id}/2fa/disable",
      );
    }
    this.#account(caller, targetId);
    return await this.#off.forOther(
      { actorId, targetId, password, action: "user.2fa.recover" },
      ctx,
    );
  }

  /** The account (404 without one), which `caller` must be allowed to manage. */
  #account(caller: SignedIn, userId: string): UserRow {
    const row = this.#checks.account(userId);
    assertMayManage(this.#deps.roles, caller, row);
    return row;
  }

  async verifyLogin(user: UserRow, code: string): Promise<TotpCheck> {
    const deps = this.#deps;
    const lockout = this.lockout;
    const wait = lockout.retryAfter([codeKey(user.id)]);
    if (wait > 0) return { ok: false, reason: "locked", retryAfter: wait };
    const secret = await this.#checks.openSecret(user.totp_secret_enc, user.id);
    if (!secret) return { ok: false, reason: "unreadable" };
    const step = matchTotpStep(secret, code, deps.clock.now());
    if (step === undefined) {
      lockout.fail([codeKey(user.id)]);
      return { ok: false, reason: "invalid" };
    }
    if (!deps.transaction(() => deps.totp.acceptStep(user.id, step))) {
      lockout.fail([codeKey(user.id)]);
      return { ok: false, reason: "replayed" };
    }
    lockout.reset(codeKey(user.id));
    return { ok: true };
  }

  sweep(): void {
    this.#deps.transaction(() => this.#deps.totp.sweepPending(this.#deps.clock.now()));
    this.lockout.sweep();
  }
}

/** The two-factor service over the users and TOTP repositories. */
export function createTwoFactor(deps: TwoFactorDeps): TwoFactor {
  return new TwoFactorService(deps);
}
