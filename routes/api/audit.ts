/** `GET /api/audit`: the audit trail, newest first, with filters and cursor pagination. */
import { z } from "zod";
import type { Audit } from "../../mod/core/audit.ts";
import { perm, type RouteDef } from "./route.ts";
import { cursorQuery, readQuery } from "./validate.ts";

/** An ISO 8601 time or milliseconds since the epoch. */
const time = z.string().transform((v, ctx) => {
  const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(ms)) {
    ctx.addIssue({
      code: "custom",
      message: 'expected an ISO 8601 time such as "2026-01-31T12:00:00Z" or epoch milliseconds',
    });
    return z.NEVER;
  }
  return ms;
});

const query = z.strictObject({
  from: time.optional(),
  to: time.optional(),
  actor: z.string().min(1).max(256).optional(),
  action: z.string().min(1).max(128).optional(),
  result: z.enum(["success", "failure", "denied"]).optional(),
  cursor: cursorQuery.rowId.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

export function auditRoutes(audit: Audit): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/audit",
      access: perm("read:audit"),
      handler: (c) => {
        const q = readQuery(c, query);
        return c.json(audit.list({
          from: q.from,
          to: q.to,
          actor: q.actor,
          action: q.action,
          result: q.result,
          beforeId: q.cursor,
          limit: q.limit,
        }));
      },
    },
  ];
}
