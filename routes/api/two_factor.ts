/**
 * Two-factor authentication of an account (`/api/users/{id}/2fa/*`, the specification's
 * `write:users` family): setup, enable and disable need `write:users` for another account, while
 * every signed-in user manages their own second factor without it; recovery is for another
 * account only. The recovery codes: their count, and a new set confirmed by the caller's password
 * (the codes are in that answer and in the one turning 2FA on, nowhere else). Signed-in users
 * only: API tokens are refused here (`sessionOnly`), whatever their permissions.
 */
import { z } from "zod";
import type { SignedIn, TwoFactor } from "../../mod/identity/two_factor.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import type { Ctx } from "./env.ts";
import { type Access, perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

export interface TwoFactorRouteDeps extends AuditSink {
  readonly twoFactor: TwoFactor;
}

/** `write:users`, except on one's own account: 2FA protects every account, not only admins'. */
export const OWN_OR_WRITE_USERS: Access = perm("write:users", {
  sessionOnly: true,
  ownAccount: "id",
});

const code = z.string().regex(/^[0-9]{6}$/, "expected the 6-digit code of the authenticator");
const password = z.string().min(1).max(1024);
const setupBody = z.strictObject({});
const enableBody = z.strictObject({ code });
// The owner sends a current code; an administrator acting on another account only their own
// password (they do not hold that account's authenticator).
const disableBody = z.strictObject({ password, code: code.optional() });
const passwordBody = z.strictObject({ password });

type Run = <T>(
  c: Ctx,
  action: string,
  fn: (caller: SignedIn, id: string) => Promise<T>,
) => Promise<T>;

/** The recovery codes' count (no code) and a new set, shown once. */
function recoveryCodeRoutes(deps: TwoFactorRouteDeps, run: Run): RouteDef[] {
  const path = "/api/users/:id/2fa/recovery-codes";
  return [
    {
      method: "GET",
      path,
      access: OWN_OR_WRITE_USERS,
      handler: (c) => {
        const p = c.get("principal")!;
        const caller = { userId: p.id, permissions: p.permissions };
        return c.json(deps.twoFactor.recoveryStatus(caller, c.req.param("id")!));
      },
    },
    {
      method: "POST",
      path,
      access: OWN_OR_WRITE_USERS,
      handler: async (c) => {
        const issued = await run(c, "user.2fa.recovery_codes.regenerate", async (caller, id) => {
          const body = await readJson(c, passwordBody);
          return await deps.twoFactor.regenerateRecoveryCodes(
            caller,
            id,
            body.password,
            auditContext(c),
          );
        });
        c.header("cache-control", "no-store");
        return c.json(issued, 201);
      },
    },
  ];
}

export function twoFactorRoutes(deps: TwoFactorRouteDeps): RouteDef[] {
  const run = <T>(c: Ctx, action: string, fn: (caller: SignedIn, id: string) => Promise<T>) => {
    const id = c.req.param("id")!;
    // Session-only routes: the principal is a signed-in user.
    const p = c.get("principal")!;
    return auditFailures(
      c,
      deps,
      { action, target: `user:${id}` },
      () => fn({ userId: p.id, permissions: p.permissions, sessionHash: p.sessionHash }, id),
    );
  };
  return [
    {
      method: "POST",
      path: "/api/users/:id/2fa/setup",
      access: OWN_OR_WRITE_USERS,
      handler: async (c) => {
        const result = await run(c, "user.2fa.setup", async (caller, id) => {
          await readJson(c, setupBody);
          return await deps.twoFactor.setup(caller, id, auditContext(c));
        });
        c.header("cache-control", "no-store");
        return c.json(result, 201);
      },
    },
    {
      method: "POST",
      path: "/api/users/:id/2fa/enable",
      access: OWN_OR_WRITE_USERS,
      handler: async (c) => {
        const enabled = await run(c, "user.2fa.enable", async (caller, id) => {
          const body = await readJson(c, enableBody);
          return await deps.twoFactor.enable(caller, id, body.code, auditContext(c));
        });
        c.header("cache-control", "no-store");
        return c.json(enabled);
      },
    },
    ...recoveryCodeRoutes(deps, run),
    {
      method: "POST",
      path: "/api/users/:id/2fa/disable",
      access: OWN_OR_WRITE_USERS,
      handler: async (c) => {
        const user = await run(c, "user.2fa.disable", async (caller, id) => {
          const body = await readJson(c, disableBody);
          return await deps.twoFactor.disable(caller, id, body, auditContext(c));
        });
        return c.json({ user });
      },
    },
    {
      method: "POST",
      path: "/api/users/:id/2fa/recover",
      access: perm("write:users", { sessionOnly: true }),
      handler: async (c) => {
        const user = await run(c, "user.2fa.recover", async (caller, id) => {
          const body = await readJson(c, passwordBody);
          return await deps.twoFactor.recover(caller, id, body.password, auditContext(c));
        });
        return c.json({ user });
      },
    },
  ];
}
