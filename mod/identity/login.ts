/**
 * Password login: the (username, client) lockout first (cheap, and a locked pair learns
 * nothing), then the username rule, the CAPTCHA when the policy asks for one, the password (a
 * dummy hash for an unknown user so timing does not tell them apart), the second factor (a code
 * from the app, or one of the account's recovery codes: `login_second_factor.ts`), and finally a
 * new session. Every refusal is audited with its reason, never with the password, aggregated per
 * client and username (`refusal_audit.ts`) so a flood cannot fill the trail.
 */
import type { UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Audit } from "../core/audit.ts";
import { type Captcha, CaptchaError } from "./captcha.ts";
import type { CaptchaPolicyStore } from "./captcha_policy.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import {
  createLoginThrottle,
  LOGIN_LIMITS,
  LOGIN_LOCKOUT,
  type LoginThrottle,
} from "./login_throttle.ts";
import type { LockoutStore } from "./lockout.ts";
import { dummyHash, hashPassword, needsRehash, verifyPassword } from "./password_hash.ts";
import type { Random } from "../core/random.ts";
import type { RefusalAudit } from "./refusal_audit.ts";
import type { NewSessionResult, Sessions } from "./sessions.ts";
import {
  checkSecondFactor,
  type LoginInput,
  type LoginRefusal,
  type SecondFactorPassed,
  type TotpVerifier,
} from "./login_second_factor.ts";
import { assertUsername, type PublicUser, toPublicUser } from "./users.ts";

export type { LoginInput, TotpCheck, TotpVerifier } from "./login_second_factor.ts";
export { LOGIN_LOCKOUT };

export interface LoginContext {
  readonly clientIp: string;
  readonly traceId: string;
  readonly userAgent: string | null;
}

export interface LoginDeps {
  readonly repo: UsersRepo;
  readonly sessions: Sessions;
  readonly captcha: Captcha;
  readonly captchaPolicy: CaptchaPolicyStore;
  readonly audit: Audit;
  readonly refusals: RefusalAudit;
  readonly clock: Clock;
  readonly random: Random;
  readonly transaction: <T>(fn: () => T) => T;
  readonly verifyTotp?: TotpVerifier;
  /** Checks (and spends) a recovery code given instead of a TOTP code. */
  readonly verifyRecoveryCode?: TotpVerifier;
  /** Told when failures lock a (username, client) pair (the `login.lockout` notification). */
  readonly lockedOut?: (username: string, clientIp: string) => void;
  /** Where the failure counts live (the store: shared by the deployment's controllers). */
  readonly lockouts?: LockoutStore;
}

const INVALID_CREDENTIALS = "Invalid username or password";

/** What the login form should show for a client. */
export interface LoginFormOptions {
  readonly captcha_required: boolean;
  readonly totp_required: boolean;
}

/** Password login (what `createLogin` returns). */
export interface Login {
  /** The (username, client) failure counts behind the lockout and the CAPTCHA policy. */
  readonly throttle: LoginThrottle;
  /** What the login form should show for this client (and username, when known). */
  options(clientIp: string, username?: string): LoginFormOptions;
  /** Checks the credentials step by step and opens a session; every refusal is audited. */
  login(
    input: LoginInput,
    ctx: LoginContext,
  ): Promise<{ user: PublicUser; session: NewSessionResult }>;
}

/** One login attempt: what was sent, and from where. */
interface Attempt {
  readonly input: LoginInput;
  readonly ctx: LoginContext;
}

/** One refused login: why (audited), what the caller is answered, and whether it counts. */
interface Refusal extends LoginRefusal {
  /** The account, once known (named in the audit record). */
  readonly user?: UserRow;
}

class LoginService implements Login {
  readonly throttle: LoginThrottle;
  readonly #deps: LoginDeps;

  constructor(deps: LoginDeps) {
    this.#deps = deps;
    this.throttle = createLoginThrottle(deps.clock, LOGIN_LIMITS, deps.lockouts);
  }

  options(clientIp: string, username?: string): LoginFormOptions {
    return {
      captcha_required: this.#captchaRequired(clientIp, username),
      // Asking for a code only after the password would reveal which accounts have 2FA;
      // the form shows the field whenever any account uses it.
      totp_required: this.#deps.repo.list().some((u) => u.totp_enabled === 1),
    };
  }

  async login(
    input: LoginInput,
    ctx: LoginContext,
  ): Promise<{ user: PublicUser; session: NewSessionResult }> {
    const a: Attempt = { input, ctx };
    this.#checkLockout(a);
    this.#checkUsername(a);
    this.#checkCaptcha(a);
    const account = await this.#checkPassword(a);
    const second = account.totp_enabled ? await this.#checkSecondFactor(a, account) : {};
    return await this.#openSession(a, account, second);
  }

  #captchaRequired(clientIp: string, username?: string): boolean {
    return this.#deps.captchaPolicy.required(this.throttle.pressure(clientIp, username));
  }

  /** A locked (username, client) pair learns nothing more, not even whether the password is right. */
  #checkLockout(a: Attempt): void {
    const wait = this.throttle.retryAfter(a.input.username, a.ctx.clientIp);
    if (wait > 0) {
      this.#refuse(a, {
        reason: "locked_out",
        error: new AppError(
          429,
          "TOO_MANY_ATTEMPTS",
          `Too many failed logins: retry in ${wait} s`,
          {
            details: { retry_after: wait },
          },
        ),
        count: false,
      });
    }
  }

  #checkUsername(a: Attempt): void {
    try {
      assertUsername(a.input.username);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      this.#refuse(a, { reason: "username_invalid", error: err, count: true });
    }
  }

  /** When the policy asks for a CAPTCHA, a receipt of a solved one is spent. */
  #checkCaptcha(a: Attempt): void {
    const { input, ctx } = a;
    if (!this.#captchaRequired(ctx.clientIp, input.username)) return;
    if (!input.captcha_receipt) {
      this.#refuse(a, {
        reason: "captcha_missing",
        error: new AppError(
          403,
          "CAPTCHA_REQUIRED",
          "A CAPTCHA is required: solve a challenge from POST /api/auth/captcha first",
        ),
        count: false,
      });
    }
    try {
      this.#deps.captcha.consumeReceipt(input.captcha_receipt!, input.username, ctx.clientIp);
    } catch (err) {
      if (!(err instanceof CaptchaError)) throw err;
      this.#refuse(a, { reason: `captcha_${err.reason}`, error: err, count: false });
    }
  }

  /** The account, when the password is right (a dummy hash for an unknown user) and enabled. */
  async #checkPassword(a: Attempt): Promise<UserRow> {
    const user = this.#deps.repo.getByUsername(a.input.username);
    const valid = await verifyPassword(a.input.password, user?.password_hash ?? dummyHash());
    if (!user || !valid) {
      this.#refuse(a, {
        reason: user ? "wrong_password" : "unknown_user",
        error: new AppError(401, "UNAUTHORIZED", INVALID_CREDENTIALS),
        count: true,
        user,
      });
    }
    if (user.disabled) {
      this.#refuse(a, {
        reason: "disabled",
        error: new AppError(403, "ACCOUNT_DISABLED", "This account is disabled"),
        count: true,
        user,
      });
    }
    return user;
  }

  /** A current two-factor code (or an unused recovery code) of a 2FA account, spent by the check. */
  async #checkSecondFactor(a: Attempt, account: UserRow): Promise<SecondFactorPassed> {
    const deps = this.#deps;
    const verifiers = { totp: deps.verifyTotp, recovery: deps.verifyRecoveryCode };
    const outcome = await checkSecondFactor(a.input, account, verifiers);
    if ("refusal" in outcome) this.#refuse(a, { ...outcome.refusal, user: account });
    return outcome;
  }

  /** The session of a successful login (the password rehashed when its parameters aged). */
  async #openSession(
    a: Attempt,
    account: UserRow,
    second: SecondFactorPassed,
  ): Promise<{ user: PublicUser; session: NewSessionResult }> {
    const deps = this.#deps;
    const { input, ctx } = a;
    const rehash = needsRehash(account.password_hash)
      ? await hashPassword(input.password, deps.random)
      : undefined;
    this.throttle.succeed(input.username, ctx.clientIp);
    return deps.transaction(() => {
      if (rehash) deps.repo.rehashPassword(account.id, rehash);
      const session = deps.sessions.create(account, ctx.clientIp, ctx.userAgent);
      const by = {
        actor: { type: "user", id: account.id, name: account.username },
        target: `user:${account.id}`,
        result: "success",
        clientIp: ctx.clientIp,
        traceId: ctx.traceId,
      } as const;
      const left = second.recoveryCodesLeft;
      deps.audit.record({
        ...by,
        action: "auth.login",
        ...(left === undefined ? {} : { detail: { second_factor: "recovery_code" } }),
      });
      if (left !== undefined) {
        deps.audit.record({
          ...by,
          action: "user.2fa.recovery_code.use",
          detail: { remaining: left },
        });
      }
      return { user: toPublicUser(account), session };
    });
  }

  /** Counts (when it counts) and audits a refusal, then throws its error. */
  #refuse(a: Attempt, r: Refusal): never {
    const { input, ctx } = a;
    if (r.count && this.throttle.fail(input.username, ctx.clientIp)) {
      this.#deps.lockedOut?.(input.username, ctx.clientIp);
    }
    this.#deps.refusals.record({
      actor: r.user
        ? { type: "user", id: r.user.id, name: r.user.username }
        : { type: "anonymous" },
      action: "auth.login",
      target: r.user ? `user:${r.user.id}` : undefined,
      clientIp: ctx.clientIp,
      traceId: ctx.traceId,
      username: input.username.slice(0, 64),
      reason: r.reason,
    });
    throw r.error;
  }
}

/** Password login over the users, sessions, CAPTCHA and refusal audit. */
export function createLogin(deps: LoginDeps): Login {
  return new LoginService(deps);
}
