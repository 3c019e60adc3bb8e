/**
 * Password login: the (username, client) lockout first (cheap, and a locked pair learns
 * nothing), then the username rule, the CAPTCHA when the policy asks for one, the password (a
 * dummy hash for an unknown user so timing does not tell them apart), the second factor, and
 * finally a new session. Every refusal is audited with its reason, never with the password,
 * aggregated per client and username (`refusal_audit.ts`) so a flood cannot fill the trail.
 */
import type { UserRow, UsersRepo } from "../../db/users_repo.ts";
import type { Audit } from "../core/audit.ts";
import { type Captcha, CaptchaError } from "./captcha.ts";
import type { CaptchaPolicyStore } from "./captcha_policy.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import { createLoginThrottle, LOGIN_LIMITS } from "./login_throttle.ts";
import { DUMMY_HASH, hashPassword, needsRehash, verifyPassword } from "./password_hash.ts";
import type { Random } from "../core/random.ts";
import type { RefusalAudit } from "./refusal_audit.ts";
import type { NewSessionResult, Sessions } from "./sessions.ts";
import { assertUsername, type PublicUser, toPublicUser } from "./users.ts";

/** The outcome of checking a second-factor code at login. */
export type TotpCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: "invalid" | "replayed" | "unreadable" }
  | { readonly ok: false; readonly reason: "locked"; readonly retryAfter: number };

/** Checks a second-factor code (and spends it); without one, 2FA accounts cannot log in. */
export type TotpVerifier = (user: UserRow, code: string) => Promise<TotpCheck>;

/** The backoff of one key (also used by two-factor checks): 5 failures, then 30 s doubling. */
export const LOGIN_LOCKOUT = {
  threshold: LOGIN_LIMITS.threshold,
  baseLockMs: LOGIN_LIMITS.baseLockMs,
  maxLockMs: LOGIN_LIMITS.maxLockMs,
  windowMs: LOGIN_LIMITS.windowMs,
} as const;

export interface LoginInput {
  readonly username: string;
  readonly password: string;
  readonly totp_code?: string;
  readonly captcha_receipt?: string;
}

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
  /** Told when failures lock a (username, client) pair (the `login.lockout` notification). */
  readonly lockedOut?: (username: string, clientIp: string) => void;
}

const INVALID_CREDENTIALS = "Invalid username or password";

export function createLogin(deps: LoginDeps) {
  const throttle = createLoginThrottle(deps.clock);

  const captchaRequired = (clientIp: string, username?: string) =>
    deps.captchaPolicy.required(throttle.pressure(clientIp, username));

  const refuse = (
    input: LoginInput,
    ctx: LoginContext,
    reason: string,
    error: AppError,
    options: { count: boolean; user?: UserRow } = { count: true },
  ): never => {
    if (options.count && throttle.fail(input.username, ctx.clientIp)) {
      deps.lockedOut?.(input.username, ctx.clientIp);
    }
    deps.refusals.record({
      actor: options.user
        ? { type: "user", id: options.user.id, name: options.user.username }
        : { type: "anonymous" },
      action: "auth.login",
      target: options.user ? `user:${options.user.id}` : undefined,
      clientIp: ctx.clientIp,
      traceId: ctx.traceId,
      username: input.username.slice(0, 64),
      reason,
    });
    throw error;
  };

  return {
    throttle,
    /** What the login form should show for this client (and username, when known). */
    options(clientIp: string, username?: string) {
      return {
        captcha_required: captchaRequired(clientIp, username),
        // Asking for a code only after the password would reveal which accounts have 2FA;
        // the form shows the field whenever any account uses it.
        totp_required: deps.repo.list().some((u) => u.totp_enabled === 1),
      };
    },

    async login(
      input: LoginInput,
      ctx: LoginContext,
    ): Promise<{ user: PublicUser; session: NewSessionResult }> {
      const wait = throttle.retryAfter(input.username, ctx.clientIp);
      if (wait > 0) {
        refuse(
          input,
          ctx,
          "locked_out",
          new AppError(429, "TOO_MANY_ATTEMPTS", `Too many failed logins: retry in ${wait} s`, {
            details: { retry_after: wait },
          }),
          { count: false },
        );
      }
      try {
        assertUsername(input.username);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        refuse(input, ctx, "username_invalid", err);
      }
      if (captchaRequired(ctx.clientIp, input.username)) {
        if (!input.captcha_receipt) {
          refuse(
            input,
            ctx,
            "captcha_missing",
            new AppError(
              403,
              "CAPTCHA_REQUIRED",
              "A CAPTCHA is required: solve a challenge from POST /api/auth/captcha first",
            ),
            { count: false },
          );
        }
        try {
          deps.captcha.consumeReceipt(input.captcha_receipt!, input.username, ctx.clientIp);
        } catch (err) {
          if (!(err instanceof CaptchaError)) throw err;
          refuse(input, ctx, `captcha_${err.reason}`, err, { count: false });
        }
      }
      const user = deps.repo.getByUsername(input.username);
      const valid = await verifyPassword(input.password, user?.password_hash ?? DUMMY_HASH);
      if (!user || !valid) {
        refuse(
          input,
          ctx,
          user ? "wrong_password" : "unknown_user",
          new AppError(401, "UNAUTHORIZED", INVALID_CREDENTIALS),
          { count: true, user },
        );
      }
      const account = user!;
      if (account.disabled) {
        refuse(
          input,
          ctx,
          "disabled",
          new AppError(403, "ACCOUNT_DISABLED", "This account is disabled"),
          { count: true, user: account },
        );
      }
      if (account.totp_enabled) {
        if (!deps.verifyTotp) {
          refuse(
            input,
            ctx,
            "totp_unavailable",
            new AppError(
              401,
              "TOTP_UNAVAILABLE",
              "This account uses two-factor authentication, which this build cannot verify",
            ),
            { count: false, user: account },
          );
        }
        if (!input.totp_code) {
          refuse(
            input,
            ctx,
            "totp_missing",
            new AppError(401, "TOTP_REQUIRED", "A two-factor code is required"),
            { count: false, user: account },
          );
        }
        const check = await deps.verifyTotp!(account, input.totp_code!);
        if (!check.ok && check.reason === "locked") {
          refuse(
            input,
            ctx,
            "totp_locked",
            new AppError(
              429,
              "TOO_MANY_ATTEMPTS",
              `Too many wrong two-factor codes: retry in ${check.retryAfter} s`,
              { details: { retry_after: check.retryAfter } },
            ),
            { count: false, user: account },
          );
        }
        if (!check.ok) {
          // A replayed code answers exactly like a wrong one; the audit keeps the difference.
          refuse(
            input,
            ctx,
            `totp_${check.reason}`,
            new AppError(401, "TOTP_INVALID", "Invalid two-factor code"),
            { count: true, user: account },
          );
        }
      }
      const rehash = needsRehash(account.password_hash)
        ? await hashPassword(input.password, deps.random)
        : undefined;
      throttle.succeed(input.username, ctx.clientIp);
      return deps.transaction(() => {
        if (rehash) deps.repo.rehashPassword(account.id, rehash);
        const session = deps.sessions.create(account, ctx.clientIp, ctx.userAgent);
        deps.audit.record({
          actor: { type: "user", id: account.id, name: account.username },
          action: "auth.login",
          target: `user:${account.id}`,
          result: "success",
          clientIp: ctx.clientIp,
          traceId: ctx.traceId,
        });
        return { user: toPublicUser(account), session };
      });
    },
  };
}

export type Login = ReturnType<typeof createLogin>;
