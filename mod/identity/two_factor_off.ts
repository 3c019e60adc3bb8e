/**
 * Turning two-factor authentication off: the owner confirms with the password and a current code
 * (which is spent); an administrator acting on another account confirms with their own password,
 * and the other administrators are notified. Either way the pending setup and the recovery
 * codes go too and the credential epoch advances (the account's sessions end).
 */
import type { TotpRepo } from "../../db/totp_repo.ts";
import type { UsersRepo } from "../../db/users_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Notifications } from "../core/notifications.ts";
import {
  codeKey,
  invalidCode,
  notEnabled,
  passwordKey,
  type TwoFactorChecks,
} from "./two_factor_checks.ts";
import { type PublicUser, toPublicUser } from "./users.ts";

type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export interface TwoFactorOffDeps {
  readonly users: UsersRepo;
  readonly totp: TotpRepo;
  readonly audit: Audit;
  readonly notifications: Notifications;
  readonly clock: Clock;
  readonly transaction: <T>(fn: () => T) => T;
}

/** An administrator turning off another account's 2FA, confirmed by their own password. */
export interface TurnOffForOther {
  readonly actorId: string;
  readonly targetId: string;
  readonly password: string;
  readonly action: "user.2fa.disable" | "user.2fa.recover";
}

/** The two ways 2FA is turned off, on the shared checks and lockout. */
export class TwoFactorOff {
  readonly #deps: TwoFactorOffDeps;
  readonly #checks: TwoFactorChecks;

  constructor(deps: TwoFactorOffDeps, checks: TwoFactorChecks) {
    this.#deps = deps;
    this.#checks = checks;
  }

  /** The owner turns 2FA off with the password and a current code. */
  async own(
    userId: string,
    input: { password: string; code?: string },
    ctx: AuditContext,
  ): Promise<PublicUser> {
    const deps = this.#deps;
    const checks = this.#checks;
    const lockout = checks.lockout;
    const row = checks.account(userId);
    if (!row.totp_enabled) throw notEnabled();
    if (input.code === undefined) {
      throw new AppError(
        400,
        "BAD_REQUEST",
        'Invalid field "code": required to turn off your own two-factor authentication',
        { details: { field: "code" } },
      );
    }
    checks.assertNotLocked([codeKey(row.id), passwordKey(row.id)]);
    await checks.checkPassword(row, input.password);
    const secret = await checks.openSecret(row.totp_secret_enc, row.id);
    if (!secret) {
      throw new AppError(
        409,
        "TOTP_UNREADABLE",
        "The stored two-factor secret cannot be decrypted (was totp.key replaced?): ask an administrator to recover two-factor authentication",
      );
    }
    const step = checks.matchCode(secret, row.id, input.code);
    deps.transaction(() => {
      if (!deps.totp.acceptStep(row.id, step)) {
        lockout.fail([codeKey(row.id)]);
        throw invalidCode();
      }
      deps.users.setTotp(row.id, null, deps.clock.now());
      deps.totp.deletePending(row.id);
      deps.totp.deleteRecovery(row.id);
      deps.audit.record({
        ...ctx,
        action: "user.2fa.disable",
        target: `user:${row.id}`,
        result: "success",
      });
    });
    lockout.reset(codeKey(row.id));
    lockout.reset(passwordKey(row.id));
    return toPublicUser(checks.account(row.id));
  }

  /** Another account's 2FA off, confirmed by the acting administrator's own password. */
  async forOther(t: TurnOffForOther, ctx: AuditContext): Promise<PublicUser> {
    const deps = this.#deps;
    const checks = this.#checks;
    const target = checks.account(t.targetId);
    const actor = checks.account(t.actorId);
    if (!target.totp_enabled) throw notEnabled();
    checks.assertNotLocked([passwordKey(actor.id)]);
    await checks.checkPassword(actor, t.password);
    deps.transaction(() => {
      deps.users.setTotp(target.id, null, deps.clock.now());
      deps.totp.deletePending(target.id);
      deps.totp.deleteRecovery(target.id);
      deps.audit.record({
        ...ctx,
        action: t.action,
        target: `user:${target.id}`,
        result: "success",
        detail: { username: target.username },
      });
      deps.notifications.notifyAdmins({
        level: "warning",
        kind: t.action,
        title: `Two-factor authentication turned off for ${target.username}`,
        body:
          `${actor.username} turned off two-factor authentication of ${target.username} (${target.id}).`,
        params: { username: target.username, user_id: target.id, by: actor.username },
        link: "/console/users",
      });
    });
    checks.lockout.reset(passwordKey(actor.id));
    return toPublicUser(checks.account(target.id));
  }
}
