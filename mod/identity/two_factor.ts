/**
 * Two-factor authentication (TOTP) for accounts: setup with a pending secret that expires,
 * enable with a code for it, disable (the owner with password and code; an administrator for
 * another account with their own password, like recovery), recovery of another account, and the
 * code check at login. Who may act on which account is the route guard's decision (the owner
 * always, others with `write:users`). Secrets are sealed at rest; every change advances the
 * credential epoch (sessions end); a code is accepted once; wrong codes and passwords count
 * toward a lockout.
 */
import type { TotpRepo } from "../../db/totp_repo.ts";
import type { UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import { createLockout } from "./lockout.ts";
import type { Logger } from "../core/logger.ts";
import { LOGIN_LOCKOUT, type TotpCheck } from "./login.ts";
import type { Notifications } from "../core/notifications.ts";
import { verifyPassword } from "./password_hash.ts";
import { qrSvgDataUri } from "./qr.ts";
import type { Random } from "../core/random.ts";
import type { SecretBox } from "../core/secret_box.ts";
import {
  matchTotpStep,
  newTotpSecret,
  TOTP_ALGORITHM,
  TOTP_DIGITS,
  TOTP_PERIOD_MS,
  totpBase32,
  totpUri,
} from "./totp.ts";
import { type PublicUser, toPublicUser } from "./users.ts";

/** How long a setup waits for its confirming code. */
export const PENDING_TTL_MS = 10 * 60_000;
/** The issuer an authenticator app shows next to the account name. */
export const TOTP_ISSUER = "waf";

export type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

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
}

const codeKey = (userId: string) => `totp:${userId}`;
const passwordKey = (userId: string) => `password:${userId}`;

const invalidCode = () =>
  new AppError(403, "TOTP_INVALID", "Invalid two-factor code", { details: { field: "code" } });

export function createTwoFactor(deps: TwoFactorDeps) {
  const lockout = createLockout(deps.clock, LOGIN_LOCKOUT);

  const account = (id: string): UserRow => {
    const row = deps.users.get(id);
    if (!row) throw new AppError(404, "NOT_FOUND", `No user with id "${id}"`);
    return row;
  };

  const assertNotLocked = (keys: readonly string[]) => {
    const wait = lockout.retryAfter(keys);
    if (wait > 0) {
      throw new AppError(429, "TOO_MANY_ATTEMPTS", `Too many failed attempts: retry in ${wait} s`, {
        details: { retry_after: wait },
      });
    }
  };

  const checkPassword = async (row: UserRow, password: string) => {
    if (!(await verifyPassword(password, row.password_hash))) {
      lockout.fail([passwordKey(row.id)]);
      throw new AppError(403, "PASSWORD_INVALID", "The password is not correct", {
        details: { field: "password" },
      });
    }
  };

  const openSecret = async (sealed: string | null, userId: string) => {
    try {
      return await deps.box.open(sealed ?? "", userId);
    } catch (err) {
      deps.logger.error("two-factor secret cannot be decrypted", {
        user_id: userId,
        error: err as Error,
      });
      return undefined;
    }
  };

  /** The matching time step of `code`, or a counted failure. */
  const matchCode = (secret: Uint8Array, userId: string, code: string): number => {
    const step = matchTotpStep(secret, code, deps.clock.now());
    if (step === undefined) {
      lockout.fail([codeKey(userId)]);
      throw invalidCode();
    }
    return step;
  };

  const notEnabled = () =>
    new AppError(409, "TOTP_NOT_ENABLED", "Two-factor authentication is not enabled");

  /** Another account's 2FA off, confirmed by the acting administrator's own password. */
  const turnOffForOther = async (
    actorId: string,
    targetId: string,
    password: string,
    ctx: AuditContext,
    action: "user.2fa.disable" | "user.2fa.recover",
  ): Promise<PublicUser> => {
    const target = account(targetId);
    const actor = account(actorId);
    if (!target.totp_enabled) throw notEnabled();
    assertNotLocked([passwordKey(actor.id)]);
    await checkPassword(actor, password);
    deps.transaction(() => {
      deps.users.setTotp(target.id, null, deps.clock.now());
      deps.totp.deletePending(target.id);
      deps.audit.record({
        ...ctx,
        action,
        target: `user:${target.id}`,
        result: "success",
        detail: { username: target.username },
      });
      deps.notifications.notifyAdmins({
        level: "warning",
        kind: action,
        title: `Two-factor authentication turned off for ${target.username}`,
        body:
          `${actor.username} turned off two-factor authentication of ${target.username} (${target.id}).`,
      });
    });
    lockout.reset(passwordKey(actor.id));
    return toPublicUser(account(target.id));
  };

  return {
    lockout,

    /** Starts a setup: a new pending secret (replacing any earlier one) for the account. */
    async setup(userId: string, ctx: AuditContext): Promise<TwoFactorSetup> {
      const row = account(userId);
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
    },

    /** Confirms the pending secret with a code for it and turns 2FA on. */
    async enable(userId: string, code: string, ctx: AuditContext): Promise<PublicUser> {
      const row = account(userId);
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
      assertNotLocked([codeKey(row.id)]);
      const secret = await openSecret(pending.secret_enc, row.id);
      if (!secret) throw invalidCode();
      const step = matchCode(secret, row.id, code);
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
      lockout.reset(codeKey(row.id));
      return toPublicUser(account(row.id));
    },

    /**
     * Turns 2FA off. The owner confirms with the password and a current code; an administrator
     * acting on another account confirms with their own password (as in {@link recover}).
     */
    async disable(
      actorId: string,
      userId: string,
      input: { password: string; code?: string },
      ctx: AuditContext,
    ): Promise<PublicUser> {
      if (actorId !== userId) {
        return await turnOffForOther(actorId, userId, input.password, ctx, "user.2fa.disable");
      }
      const row = account(userId);
      if (!row.totp_enabled) throw notEnabled();
      if (input.code === undefined) {
        throw new AppError(
          400,
          "BAD_REQUEST",
          'Invalid field "code": required to turn off your own two-factor authentication',
          { details: { field: "code" } },
        );
      }
      assertNotLocked([codeKey(row.id), passwordKey(row.id)]);
      await checkPassword(row, input.password);
      const secret = await openSecret(row.totp_secret_enc, row.id);
      if (!secret) {
        throw new AppError(
          409,
          "TOTP_UNREADABLE",
          "The stored two-factor secret cannot be decrypted (was totp.key replaced?): ask an administrator to recover two-factor authentication",
        );
      }
      const step = matchCode(secret, row.id, input.code);
      deps.transaction(() => {
        if (!deps.totp.acceptStep(row.id, step)) {
          lockout.fail([codeKey(row.id)]);
          throw invalidCode();
        }
        deps.users.setTotp(row.id, null, deps.clock.now());
        deps.totp.deletePending(row.id);
        deps.audit.record({
          ...ctx,
          action: "user.2fa.disable",
          target: `user:${row.id}`,
          result: "success",
        });
      });
      lockout.reset(codeKey(row.id));
      lockout.reset(passwordKey(row.id));
      return toPublicUser(account(row.id));
    },

    /** An administrator turns off another account's 2FA after confirming its own password. */
    async recover(
      actorId: string,
      targetId: string,
      password: string,
      ctx: AuditContext,
    ): Promise<PublicUser> {
      if (actorId === targetId) {
        account(targetId);
        throw new AppError(
          403,
          "FORBIDDEN",
          "Recovery is for another account: turn off your own two-factor authentication with POST /api/users/{id}/2fa/disable",
        );
      }
      return await turnOffForOther(actorId, targetId, password, ctx, "user.2fa.recover");
    },

    /** The login check: a current code for the enabled secret, not used before. */
    async verifyLogin(user: UserRow, code: string): Promise<TotpCheck> {
      const wait = lockout.retryAfter([codeKey(user.id)]);
      if (wait > 0) return { ok: false, reason: "locked", retryAfter: wait };
      const secret = await openSecret(user.totp_secret_enc, user.id);
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
    },

    /** Forgets expired pending setups and idle lockout entries (maintenance). */
    sweep(): void {
      deps.transaction(() => deps.totp.sweepPending(deps.clock.now()));
      lockout.sweep();
    },
  };
}

export type TwoFactor = ReturnType<typeof createTwoFactor>;
