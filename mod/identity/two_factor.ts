/**
 * Two-factor authentication (TOTP) for accounts: setup with a pending secret that expires,
 * enable with a code for it, disable (the owner with password and code; an administrator for
 * another account with their own password, like recovery), recovery of another account, and the
 * code check at login. Who may reach which account is the route guard's decision (the owner
 * always, others with `write:users`); on another account the caller must also hold every
 * permission of its role (`assertMayManage`: no escalation through 2FA). Secrets are sealed at
 * rest; every change advances the credential epoch (sessions end; turning it on keeps only the
 * session that did it, which has just proved both factors); a code is accepted once; wrong codes
 * and passwords count toward a lockout; ten recovery codes stand in for a lost device. Turning 2FA on is `two_factor_on.ts`, off `two_factor_off.ts`; the recovery codes,
 * `two_factor_recovery.ts`; the shared checks, `two_factor_checks.ts`.
 */
import type { UserRow } from "../../db/users_repo.ts";
import type { AuditEvent } from "../core/audit.ts";
import { AppError } from "../core/errors.ts";
import { assertMayManage, type Caller } from "./account_authority.ts";
import type { Lockout, LockoutStore } from "./lockout.ts";
import type { TotpCheck } from "./login.ts";
import type { RoleMap } from "./permissions.ts";
import { matchTotpStep } from "./totp.ts";
import { codeKey, TwoFactorChecks } from "./two_factor_checks.ts";
import {
  type Enabled,
  TwoFactorOn,
  type TwoFactorOnDeps,
  type TwoFactorSetup,
} from "./two_factor_on.ts";
import { TwoFactorOff, type TwoFactorOffDeps } from "./two_factor_off.ts";
import {
  type IssuedCodes,
  type RecoveryStatus,
  TwoFactorRecovery,
  type TwoFactorRecoveryDeps,
} from "./two_factor_recovery.ts";
import type { PublicUser } from "./users.ts";

export { type Enabled, PENDING_TTL_MS, TOTP_ISSUER, type TwoFactorSetup } from "./two_factor_on.ts";

export type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

/** The signed-in user acting (2FA routes are for sessions only), with their permissions. */
export interface SignedIn extends Caller {
  readonly userId: string;
  /** The hash of the session asking: turning one's own 2FA on keeps this session. */
  readonly sessionHash?: string;
}

/** What every part needs: turning on, off, the recovery codes and the shared checks. */
export interface TwoFactorDeps extends TwoFactorOnDeps, TwoFactorOffDeps, TwoFactorRecoveryDeps {
  /** The configured roles, to judge whether a caller may act on another account. */
  readonly roles: RoleMap;
  /** Where the failure counts live (the store: shared by the deployment's controllers). */
  readonly lockouts?: LockoutStore;
}

/** Two-factor authentication of accounts (what `createTwoFactor` returns). */
export interface TwoFactor {
  /** The lockout of wrong codes and passwords (keys `totp:<id>`, `password:<id>`). */
  readonly lockout: Lockout;
  /** Starts a setup: a new pending secret (replacing any earlier one) for the account. */
  setup(caller: SignedIn, userId: string, ctx: AuditContext): Promise<TwoFactorSetup>;
  /**
   * Confirms the pending secret with a code for it and turns 2FA on, with a new set of recovery
   * codes. The account's sessions end, except the owner's own session that asked.
   */
  enable(caller: SignedIn, userId: string, code: string, ctx: AuditContext): Promise<Enabled>;
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
  /** How many recovery codes the account has left (no code is ever shown again). */
  recoveryStatus(caller: SignedIn, userId: string): RecoveryStatus;
  /** A new set of recovery codes (the old one stops working), confirmed by the caller's password. */
  regenerateRecoveryCodes(
    caller: SignedIn,
    userId: string,
    password: string,
    ctx: AuditContext,
  ): Promise<IssuedCodes>;
  /** The login check: a current code for the enabled secret, not used before. */
  verifyLogin(user: UserRow, code: string): Promise<TotpCheck>;
  /** The login check instead of a code: an unused recovery code, spent by the check. */
  verifyRecoveryLogin(user: UserRow, code: string): Promise<TotpCheck>;
  /** Forgets expired pending setups and idle lockout entries (maintenance). */
  sweep(): void;
}

class TwoFactorService implements TwoFactor {
  readonly lockout: Lockout;
  readonly #deps: TwoFactorDeps;
  readonly #checks: TwoFactorChecks;
  readonly #on: TwoFactorOn;
  readonly #off: TwoFactorOff;
  readonly #recovery: TwoFactorRecovery;

  constructor(deps: TwoFactorDeps) {
    this.#deps = deps;
    this.#checks = new TwoFactorChecks(deps);
    this.#off = new TwoFactorOff(deps, this.#checks);
    this.#recovery = new TwoFactorRecovery(deps, this.#checks);
    this.#on = new TwoFactorOn(deps, this.#checks, this.#recovery);
    this.lockout = this.#checks.lockout;
  }

  async setup(caller: SignedIn, userId: string, ctx: AuditContext): Promise<TwoFactorSetup> {
    return await this.#on.setup(this.#account(caller, userId), ctx);
  }

  async enable(
    caller: SignedIn,
    userId: string,
    code: string,
    ctx: AuditContext,
  ): Promise<Enabled> {
    const row = this.#account(caller, userId);
    // Only the owner's own session is kept: it has proved both factors of this account.
    const keep = caller.userId === row.id ? caller.sessionHash : undefined;
    return await this.#on.enable(row, code, keep, ctx);
  }

  recoveryStatus(caller: SignedIn, userId: string): RecoveryStatus {
    return this.#recovery.status(this.#account(caller, userId));
  }

  async regenerateRecoveryCodes(
    caller: SignedIn,
    userId: string,
    password: string,
    ctx: AuditContext,
  ): Promise<IssuedCodes> {
    const target = this.#account(caller, userId);
    const actor = this.#checks.account(caller.userId);
    return await this.#recovery.regenerate(actor, target, password, ctx);
  }

  verifyRecoveryLogin(user: UserRow, code: string): Promise<TotpCheck> {
    return this.#recovery.verifyLogin(user, code);
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
