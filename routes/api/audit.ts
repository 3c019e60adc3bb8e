/**
 * `GET /api/audit`: the audit trail, newest first, with filters and cursor pagination. Each
 * record also names its target where a lookup or the record itself knows it (`target_name`,
 * `target_type`), so the console shows "shop" rather than a site's id.
 */
import { z } from "zod";
import type { Audit, AuditRecord } from "../../mod/core/audit.ts";
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

/** The type and name of what an audit target names, when it exists. */
export type TargetLookup = (target: string) => { type: string; name: string } | undefined;

/** A name the record carries itself (an account deleted since still has its username there). */
function ownName(detail: unknown): string | undefined {
  if (typeof detail !== "object" || detail === null) return undefined;
  const d = detail as Record<string, unknown>;
  const name = d["username"] ?? d["name"];
  return typeof name === "string" && name !== "" ? name : undefined;
}

function named(r: AuditRecord, lookup: TargetLookup | undefined) {
  const found = r.target === null ? undefined : lookup?.(r.target);
  const own = r.target === null ? undefined : ownName(r.detail);
  return {
    ...r,
    target_name: found?.name ?? own ?? null,
    target_type: found?.type ?? null,
  };
}

export function auditRoutes(audit: Audit, lookup?: TargetLookup): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/audit",
      access: perm("read:audit"),
      handler: (c) => {
        const q = readQuery(c, query);
        const page = audit.list({
          from: q.from,
          to: q.to,
          actor: q.actor,
          action: q.action,
          result: q.result,
          beforeId: q.cursor,
          limit: q.limit,
        });
        return c.json({ ...page, items: page.items.map((r) => named(r, lookup)) });
      },
    },
  ];
}
