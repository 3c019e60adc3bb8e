/** Account management: list, read, create and update users (read:users / write:users). */
import { z } from "zod";
import type { Users } from "../../mod/identity/users.ts";
import { auditContext } from "./actor.ts";
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

const updateBody = z.strictObject({
  username: z.string().max(256).optional(),
  password: z.string().max(4096).optional(),
  role: z.string().max(256).optional(),
  disabled: z.boolean().optional(),
});

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
        const user = await auditFailures(c, deps, "user.create", "users", async () => {
          const body = await readJson(c, createBody);
          return await deps.users.create(body, auditContext(c));
        });
        return c.json(user, 201);
      },
    },
    {
      method: "PUT",
      path: "/api/users/:id",
      access: perm("write:users"),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const user = await auditFailures(c, deps, "user.update", `user:${id}`, async () => {
          const body = await readJson(c, updateBody);
          return await deps.users.update(id, body, auditContext(c));
        });
        return c.json(user);
      },
    },
  ];
}
