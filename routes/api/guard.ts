/**
 * The one guard in front of every management route. It enforces the access each RouteDef
 * declares: public routes pass; bootstrap routes only while setup is incomplete (the handlers
 * then check the setup token or setup session); permission routes need a principal (session
 * cookie or, when installed, a bearer token) holding the permission. State-changing requests
 * authenticated by a session must double-submit the CSRF value. 401 `UNAUTHORIZED` means
 * "who are you?", 403 `FORBIDDEN` / `CSRF_INVALID` means "not this".
 */
import type { Audit } from "../../mod/core/audit.ts";
import { safeEqual } from "../../mod/core/digest.ts";
import { AppError } from "../../mod/core/errors.ts";
import { grants } from "../../mod/identity/permissions.ts";
import type { Authenticated, Sessions } from "../../mod/identity/sessions.ts";
import type { Setup } from "../../mod/identity/setup.ts";
import { auditContext } from "./actor.ts";
import { CSRF_COOKIE, CSRF_HEADER, readCookie, SESSION_COOKIE } from "./cookies.ts";
import type { Ctx, Principal } from "./env.ts";
import type { Access, Guard } from "./route.ts";

export interface GuardDeps {
  readonly sessions: Sessions;
  readonly setup: Setup;
  readonly audit: Audit;
  readonly transaction: <T>(fn: () => T) => T;
  /** Resolves `Authorization: Bearer <token>` (API tokens); without it bearer requests get 401. */
  readonly bearer?: (
    c: Ctx,
    token: string,
  ) => Principal | undefined | Promise<Principal | undefined>;
  /**
   * Authenticates cluster node calls (it may throw its own 401/403); without it, or when it
   * answers false, `node` routes answer 401.
   */
  readonly node?: (c: Ctx) => boolean | Promise<boolean>;
}

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const BEARER = /^Bearer ([\x21-\x7e]+)$/;

export function unauthorized(message = "Authentication required: sign in first"): AppError {
  return new AppError(401, "UNAUTHORIZED", message);
}

/** The session behind the request's cookie, if any (no CSRF check, no error). */
export function sessionOf(c: Ctx, sessions: Sessions): Authenticated | undefined {
  const id = readCookie(c, SESSION_COOKIE);
  return id ? sessions.authenticate(id) : undefined;
}

/** True when the request double-submits the CSRF value bound to `sessionId`. */
export function csrfValid(c: Ctx, sessions: Sessions, sessionId: string): boolean {
  const header = c.req.header(CSRF_HEADER) ?? "";
  const cookie = readCookie(c, CSRF_COOKIE) ?? "";
  // Both comparisons always run, so timing does not tell which one failed.
  const pair = safeEqual(header, cookie);
  const bound = safeEqual(cookie, sessions.csrfFor(sessionId));
  return header !== "" && pair && bound;
}

export function createGuard(deps: GuardDeps): Guard {
  const deny = (c: Ctx, principal: Principal, action: string, detail: Record<string, unknown>) => {
    c.set("principal", principal);
    deps.transaction(() =>
      deps.audit.record({
        ...auditContext(c),
        action,
        target: `${c.req.method} ${c.req.path}`,
        result: "denied",
        detail,
      })
    );
  };

  const authenticate = async (c: Ctx): Promise<{ principal: Principal; sessionId?: string }> => {
    const authorization = c.req.header("authorization");
    if (authorization !== undefined) {
      const m = BEARER.exec(authorization);
      const principal = m && deps.bearer ? await deps.bearer(c, m[1]!) : undefined;
      if (!principal) throw unauthorized("Invalid or unsupported Authorization header");
      return { principal };
    }
    const id = readCookie(c, SESSION_COOKIE);
    const found = id ? deps.sessions.authenticate(id) : undefined;
    if (!found) throw unauthorized();
    return { principal: found.principal, sessionId: id };
  };

  const checkPermission = async (
    c: Ctx,
    access: Extract<Access, { kind: "permission" }>,
  ): Promise<void> => {
    const { principal, sessionId } = await authenticate(c);
    if (sessionId !== undefined && UNSAFE.has(c.req.method)) {
      if (!csrfValid(c, deps.sessions, sessionId)) {
        deny(c, principal, "auth.csrf", { reason: "csrf_invalid" });
        throw new AppError(
          403,
          "CSRF_INVALID",
          `CSRF check failed: send the ${CSRF_COOKIE} cookie value in the X-CSRF-Token header`,
        );
      }
    }
    if (access.sessionOnly && principal.kind !== "user") {
      deny(c, principal, "auth.denied", { permission: access.permission, reason: "session_only" });
      throw new AppError(
        403,
        "FORBIDDEN",
        "This endpoint needs a signed-in user, not an API token",
      );
    }
    const own = access.ownAccount !== undefined && principal.kind === "user" &&
      c.req.param(access.ownAccount) === principal.id;
    if (!own && !grants(principal.permissions, access.permission)) {
      deny(c, principal, "auth.denied", { permission: access.permission });
      throw new AppError(403, "FORBIDDEN", `Permission "${access.permission}" is required`, {
        details: { permission: access.permission },
      });
    }
    c.set("principal", principal);
  };

  return async (c, access) => {
    switch (access.kind) {
      case "public":
        return;
      case "bootstrap":
        deps.setup.assertIncomplete();
        return;
      case "node":
        if (access.credential === "join_token") return;
        if (deps.node && await deps.node(c)) return;
        throw unauthorized("Node authentication required");
      case "permission":
        return await checkPermission(c, access);
    }
  };
}
