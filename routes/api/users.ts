/**
 * Account management: list, read, create and update users (read:users / write:users). A
 * signed-in user reaches their own account's `PUT` without `write:users`, to change their own
 * password (with `current_password`); what a caller may change is the users service's decision.
 */
import { z } from "zod";
import { badRequest } from "../../mod/core/errors.ts";
import type { Users } from "../../mod/identity/users.ts";
import { auditContext, callerOf } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

export interface UserRouteDeps extends AuditSink {
  readonly users: Users;
}

// Lengths are generous here on purpose: the username, role and password rules give the
// precise 400 (USERNAME_INVALID, ROLE_INVALID, PASSWORD_POLICY); zod only bounds the input.
const createBody = z.strictObject({
  username: z.string().max(256),
  password: z.string().max(4096),
  role: z.string().max(256),
});

/**
 * The changeable fields, and the read-only ones of the user `GET` answers, so that answer can be
 * written back: `created_at` and `updated_at` are ignored; `id` must be the path's and
 * `totp_enabled` the current state (2FA changes through its own routes), else 400 naming them.
 */
const updateBody = z.strictObject({
  username: z.string().max(256).optional(),
  password: z.string().max(4096).optional(),
  current_password: z.string().max(4096).optional(),
  role: z.string().max(256).optional(),
  disabled: z.boolean().optional(),
  id: z.string().max(256).optional(),
  totp_enabled: z.boolean().optional(),
  created_at: z.string().max(64).optional(),
  updated_at: z.string().max(64).optional(),
});

/** Throws 400 when a read-only field asks for a change. */
function readOnly(field: string, given: unknown, current: unknown, hint: string): void {
  if (given !== undefined && given !== current) {
    throw badRequest(`Invalid field "${field}": read-only; ${hint}`, field);
  }
}

export function userRoutes(deps: UserRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/users",
      access: perm("read:users"),
      handler: (c) => c.json({ items: deps.users.list() }),
    },
    {
      method: "GET",
      path: "/api/users/:id",
      access: perm("read:users"),
      handler: (c) => c.json(deps.users.get(c.req.param("id")!)),
    },
    {
      method: "POST",
      path: "/api/users",
      access: perm("write:users"),
      handler: async (c) => {
        const user = await auditFailures(
          c,
          deps,
          { action: "user.create", target: "users" },
          async () => {
            const body = await readJson(c, createBody);
            return await deps.users.create(body, { ...auditContext(c), caller: callerOf(c) });
          },
        );
        return c.json(user, 201);
      },
    },
    {
      method: "PUT",
      path: "/api/users/:id",
      access: perm("write:users", { ownAccount: "id" }),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const user = await auditFailures(
          c,
          deps,
          { action: "user.update", target: `user:${id}` },
          async () => {
            const { id: bodyId, totp_enabled, created_at: _c, updated_at: _u, ...changes } =
              await readJson(c, updateBody);
            const current = deps.users.get(id);
            readOnly("id", bodyId, current.id, "it must be the id in the path");
            readOnly(
              "totp_enabled",
              totp_enabled,
              current.totp_enabled,
              `use POST /api/users/${id}/2fa/enable or /2fa/disable`,
            );
            return await deps.users.update(id, changes, {
              ...auditContext(c),
              caller: callerOf(c),
            });
          },
        );
        return c.json(user);
      },
    },
  ];
}
