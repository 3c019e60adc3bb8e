/**
 * Two-factor authentication of an account: setup, enable and disable by the account owner,
 * recovery of another account by an administrator. Signed-in users only: API tokens are
 * refused here (`sessionOnly`), whatever their permissions.
 */
import { z } from "zod";
import { PERMISSIONS } from "../../mod/identity/permissions.ts";
import type { TwoFactor } from "../../mod/identity/two_factor.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import type { Ctx } from "./env.ts";
import { type Access, perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

export interface TwoFactorRouteDeps extends AuditSink {
  readonly twoFactor: TwoFactor;
}

/**
 * Any signed-in user whose role grants at least one permission: 2FA protects every account,
 * not only administrators. The handlers then allow the account owner alone.
 */
export const ANY_SIGNED_IN_USER: Access = perm("read:users", {
  alternatives: PERMISSIONS.filter((p) => p !== "read:users"),
  sessionOnly: true,
});

const code = z.string().regex(/^[0-9]{6}$/, "expected the 6-digit code of the authenticator");
const password = z.string().min(1).max(1024);
const setupBody = z.strictObject({});
const enableBody = z.strictObject({ code });
const disableBody = z.strictObject({ password, code });
const recoverBody = z.strictObject({ password });

export function twoFactorRoutes(deps: TwoFactorRouteDeps): RouteDef[] {
  const run = <T>(c: Ctx, action: string, fn: (actorId: string, id: string) => Promise<T>) => {
    const id = c.req.param("id")!;
    return auditFailures(c, deps, action, `user:${id}`, () => fn(c.get("principal")!.id, id));
  };
  return [
    {
      method: "POST",
      path: "/api/users/:id/2fa/setup",
      access: ANY_SIGNED_IN_USER,
      handler: async (c) => {
        const result = await run(c, "user.2fa.setup", async (actor, id) => {
          await readJson(c, setupBody);
          return await deps.twoFactor.setup(actor, id, auditContext(c));
        });
        c.header("cache-control", "no-store");
        return c.json(result, 201);
      },
    },
    {
      method: "POST",
      path: "/api/users/:id/2fa/enable",
      access: ANY_SIGNED_IN_USER,
      handler: async (c) => {
        const user = await run(c, "user.2fa.enable", async (actor, id) => {
          const body = await readJson(c, enableBody);
          return await deps.twoFactor.enable(actor, id, body.code, auditContext(c));
        });
        return c.json({ user });
      },
    },
    {
      method: "POST",
      path: "/api/users/:id/2fa/disable",
      access: ANY_SIGNED_IN_USER,
      handler: async (c) => {
        const user = await run(c, "user.2fa.disable", async (actor, id) => {
          const body = await readJson(c, disableBody);
          return await deps.twoFactor.disable(actor, id, body, auditContext(c));
        });
        return c.json({ user });
      },
    },
    {
      method: "POST",
      path: "/api/users/:id/2fa/recover",
      access: perm("write:users", { sessionOnly: true }),
      handler: async (c) => {
        const user = await run(c, "user.2fa.recover", async (actor, id) => {
          const body = await readJson(c, recoverBody);
          return await deps.twoFactor.recover(actor, id, body.password, auditContext(c));
        });
        return c.json({ user });
      },
    },
  ];
}
