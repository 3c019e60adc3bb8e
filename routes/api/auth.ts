/**
 * Login, logout, the current session, login options, the CAPTCHA and its policy. Login and
 * the CAPTCHA are public by nature; logout and session are public routes that act only on
 * the caller's own session (logout still demands the CSRF double-submit when one exists).
 */
import { z } from "zod";
import type { Captcha } from "../../mod/identity/captcha.ts";
import { CaptchaError } from "../../mod/identity/captcha.ts";
import type { CaptchaPolicyStore } from "../../mod/identity/captcha_policy.ts";
import type { Clock } from "../../mod/core/clock.ts";
import { AppError } from "../../mod/core/errors.ts";
import type { Login } from "../../mod/identity/login.ts";
import type { RefusalAudit } from "../../mod/identity/refusal_audit.ts";
import {
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  type Sessions,
} from "../../mod/identity/sessions.ts";
import { assertUsername, toPublicUser } from "../../mod/identity/users.ts";
import { grants, PERMISSIONS } from "../../mod/identity/permissions.ts";
import { LANGUAGES, type Preferences } from "../../mod/identity/preferences.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import { type ConsoleCookies, readCookie, SESSION_COOKIE } from "./cookies.ts";
import type { Ctx } from "./env.ts";
import { csrfValid, sessionOf, unauthorized } from "./guard.ts";
import { perm, PUBLIC, type RouteDef } from "./route.ts";
import { slowRefusals } from "./slow_refusals.ts";
import { readJson, readJsonOnly, readQuery } from "./validate.ts";

export interface AuthRouteDeps extends AuditSink {
  readonly login: Login;
  readonly sessions: Sessions;
  readonly captcha: Captcha;
  readonly captchaPolicy: CaptchaPolicyStore;
  readonly refusals: RefusalAudit;
  readonly sleep: (ms: number) => Promise<void>;
  readonly clock: Clock;
  readonly preferences: Preferences;
  readonly cookies: ConsoleCookies;
}

const loginBody = z.strictObject({
  username: z.string().max(256),
  password: z.string().max(1024),
  totp_code: z.string().max(16).optional(),
  recovery_code: z.string().max(64).optional(),
  captcha_receipt: z.string().max(2048).optional(),
}).refine((b) => b.totp_code === undefined || b.recovery_code === undefined, {
  path: ["recovery_code"],
  message: "give either totp_code or recovery_code, not both",
});

const verifyBody = z.strictObject({
  challenge: z.string().max(2048),
  nonce: z.string().regex(/^[0-9]{1,20}$/, "expected the decimal nonce that solves the challenge"),
  username: z.string().max(256),
});

/** Each preference is optional: what is left out keeps its stored value. */
const preferencesBody = z.strictObject({
  language: z.enum(LANGUAGES).nullable().optional(),
  checklist_dismissed: z.boolean().optional(),
});

const optionsQuery = z.strictObject({ username: z.string().max(256).optional() });

const policyBody = z.strictObject({
  mode: z.enum(["always", "never", "after_failures"]),
  failures: z.number().int().min(1).max(100),
  difficulty: z.number().int().min(8).max(24),
});

/** Throws 403 `CSRF_INVALID` unless the request double-submits the session's CSRF value. */
function requireCsrf(c: Ctx, sessions: Sessions, sessionId: string): void {
  if (!csrfValid(c, sessions, sessionId)) {
    throw new AppError(403, "CSRF_INVALID", "CSRF check failed: send the X-CSRF-Token header");
  }
}

/** The caller's session as `GET /api/auth/session` answers it; 401 without one. */
function sessionView(c: Ctx, deps: AuthRouteDeps) {
  const found = sessionOf(c, deps.sessions);
  if (!found) throw unauthorized("No valid session: sign in again");
  const lastSeen = Math.max(found.session.last_seen_at, deps.clock.now());
  return {
    user: toPublicUser(found.user),
    permissions: found.principal.permissions,
    /** The identifiers the role's expressions grant, for clients that hide what they lack. */
    effective_permissions: PERMISSIONS.filter((p) => grants(found.principal.permissions, p)),
    preferences: deps.preferences.get(found.user.id),
    csrf_token: deps.sessions.csrfFor(readCookie(c, SESSION_COOKIE)!),
    idle_expires_at: new Date(lastSeen + SESSION_IDLE_MS).toISOString(),
    expires_at: new Date(found.session.expires_at).toISOString(),
  };
}

/** Signing in and out, and what the sign-in form offers a username. */
function signInRoutes(deps: AuthRouteDeps): RouteDef[] {
  return [
    {
      method: "POST",
      path: "/api/auth/login",
      access: PUBLIC,
      handler: async (c) => {
        const { user, session } = await slowRefusals(
          c,
          deps,
          async () =>
            await deps.login.login(await readJsonOnly(c, loginBody), {
              clientIp: c.get("clientIp"),
              traceId: c.get("traceId"),
              userAgent: c.req.header("user-agent") ?? null,
            }),
        );
        deps.cookies.setSession(c, {
          id: session.id,
          csrf: session.csrf,
          maxAgeSeconds: SESSION_ABSOLUTE_MS / 1000,
        });
        c.header("cache-control", "no-store");
        return c.json({
          user,
          csrf_token: session.csrf,
          expires_at: new Date(session.expiresAt).toISOString(),
        });
      },
    },
    {
      method: "POST",
      path: "/api/auth/logout",
      access: PUBLIC,
      handler: (c) => {
        const id = readCookie(c, SESSION_COOKIE);
        const found = sessionOf(c, deps.sessions);
        if (found && id) {
          c.set("principal", found.principal);
          requireCsrf(c, deps.sessions, id);
          deps.transaction(() => {
            deps.sessions.revoke(found.principal.sessionHash);
            deps.audit.record({
              ...auditContext(c),
              action: "auth.logout",
              target: `user:${found.user.id}`,
              result: "success",
            });
          });
        }
        deps.cookies.clearSession(c);
        return c.body(null, 204);
      },
    },
    {
      method: "GET",
      path: "/api/auth/login-options",
      access: PUBLIC,
      handler: (c) => {
        const q = readQuery(c, optionsQuery);
        if (q.username !== undefined) assertUsername(q.username);
        return c.json(deps.login.options(c.get("clientIp"), q.username));
      },
    },
  ];
}

/** The caller's own session and preferences. */
function sessionRoutes(deps: AuthRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/auth/session",
      access: PUBLIC,
      handler: (c) => {
        c.header("cache-control", "no-store");
        return c.json(sessionView(c, deps));
      },
    },
    {
      // Like logout: any signed-in user, on their own account only, so no permission; the
      // handler demands the session and the CSRF double-submit itself. Not for API tokens.
      method: "PUT",
      path: "/api/auth/session/preferences",
      access: PUBLIC,
      handler: async (c) => {
        const found = sessionOf(c, deps.sessions);
        if (!found) throw unauthorized("No valid session: sign in again");
        c.set("principal", found.principal);
        requireCsrf(c, deps.sessions, readCookie(c, SESSION_COOKIE)!);
        const body = await readJson(c, preferencesBody);
        const userId = found.user.id;
        const saved = deps.transaction(() => {
          const before = deps.preferences.get(userId);
          const after = deps.preferences.set(userId, { ...before, ...body });
          deps.audit.record({
            ...auditContext(c),
            action: "user.preferences.update",
            target: `user:${userId}`,
            result: "success",
            detail: { before, after },
          });
          return after;
        });
        return c.json(saved);
      },
    },
  ];
}

/** Solves a CAPTCHA challenge; a wrong answer is recorded as a refusal. */
async function verifyCaptcha(c: Ctx, deps: AuthRouteDeps): Promise<Response> {
  const body = await readJson(c, verifyBody);
  assertUsername(body.username);
  try {
    return c.json(deps.captcha.verify({ ...body, clientIp: c.get("clientIp") }), 201);
  } catch (err) {
    if (err instanceof CaptchaError) {
      deps.refusals.record({
        actor: { type: "anonymous" },
        action: "auth.captcha",
        clientIp: c.get("clientIp"),
        traceId: c.get("traceId"),
        username: body.username,
        reason: err.reason,
      });
    }
    throw err;
  }
}

/** The sign-in CAPTCHA and the policy that decides when it is asked. */
function captchaRoutes(deps: AuthRouteDeps): RouteDef[] {
  return [
    {
      method: "POST",
      path: "/api/auth/captcha",
      access: PUBLIC,
      handler: (c) =>
        c.json(deps.captcha.challenge(c.get("clientIp"), deps.captchaPolicy.get().difficulty), 201),
    },
    {
      method: "POST",
      path: "/api/auth/captcha/verify",
      access: PUBLIC,
      handler: (c) => slowRefusals(c, deps, () => verifyCaptcha(c, deps)),
    },
    {
      method: "GET",
      path: "/api/auth/captcha-policy",
      access: perm("read:system"),
      handler: (c) => c.json(deps.captchaPolicy.get()),
    },
    {
      method: "PUT",
      path: "/api/auth/captcha-policy",
      access: perm("write:system"),
      handler: async (c) => {
        const policy = await auditFailures(
          c,
          deps,
          { action: "auth.captcha_policy.update", target: "captcha_policy" },
          () => readJson(c, policyBody),
        );
        deps.transaction(() => {
          const before = deps.captchaPolicy.get();
          deps.captchaPolicy.set(policy, deps.clock.now());
          deps.audit.record({
            ...auditContext(c),
            action: "auth.captcha_policy.update",
            target: "captcha_policy",
            result: "success",
            detail: { before, after: policy },
          });
        });
        return c.json(policy);
      },
    },
  ];
}

export function authRoutes(deps: AuthRouteDeps): RouteDef[] {
  return [...signInRoutes(deps), ...sessionRoutes(deps), ...captchaRoutes(deps)];
}
