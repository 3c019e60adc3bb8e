/**
 * `/api/alap`: the review queue of ALAP decisions (`read:logs`), approving, rejecting and
 * revoking them and marking a logged block as a false positive (`write:protection`), and the
 * ALAP policy (read with `read:logs`, changed with `write:protection`).
 */
import { z } from "zod";
import type { Alap } from "../../mod/protection/alap.ts";
import type { PolicyObjects } from "../../mod/protection/policy_objects.ts";
import { KIND } from "../../mod/protection/protection_compile.ts";
import { alapPolicySchema } from "../../mod/protection/protection_schema.ts";
import { auditContext } from "./actor.ts";
import { settingRoutes } from "./protection.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson, readQuery } from "./validate.ts";

const listQuery = z.strictObject({
  status: z.enum(["proposed", "applied", "rejected", "revoked", "expired"]).optional(),
});

const falsePositiveSchema = z.strictObject({
  trace_id: z.string().regex(/^[0-9a-f]{32}$/, "expected a 32-character trace id"),
  path_prefix: z.string().startsWith("/").max(1024).optional(),
});

export function alapRoutes(alap: Alap, objects: PolicyObjects): RouteDef[] {
  const reviewRoute = (action: "approve" | "reject" | "revoke"): RouteDef => ({
    method: "POST",
    path: `/api/alap/decisions/:id/${action}`,
    access: perm("write:protection"),
    handler: (c) => c.json(alap.review(c.req.param("id") ?? "", action, auditContext(c))),
  });
  return [
    {
      method: "GET",
      path: "/api/alap/decisions",
      access: perm("read:logs"),
      handler: (c) => c.json({ items: alap.list(readQuery(c, listQuery).status) }),
    },
    {
      method: "GET",
      path: "/api/alap/decisions/:id",
      access: perm("read:logs"),
      handler: (c) => c.json(alap.get(c.req.param("id") ?? "")),
    },
    reviewRoute("approve"),
    reviewRoute("reject"),
    reviewRoute("revoke"),
    {
      method: "POST",
      path: "/api/alap/false-positives",
      access: perm("write:protection"),
      handler: async (c) => {
        const body = await readJson(c, falsePositiveSchema);
        const item = await alap.falsePositive(body.trace_id, body.path_prefix, auditContext(c));
        return c.json(item, 201);
      },
    },
    ...settingRoutes(objects, {
      path: "/api/alap/policy",
      kind: KIND.alapPolicy,
      audit: "alap.policy",
      schema: alapPolicySchema,
      read: "read:logs",
      write: "write:protection",
    }),
  ];
}
