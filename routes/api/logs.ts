/**
 * `/api/logs` (`read:logs`): filtered, cursor-paginated access-log records (a site by id or
 * name), one record by trace id with its whole evaluation chain, and statistics: the pipeline's
 * counters (queued, written, dropped), the records of a period counted per action and class, and
 * the dashboard's summary of a time range (requests, blocks, classes, top targets).
 */
import { z } from "zod";
import type { AccessLog, StoredAccessRecord } from "../../mod/access_log/access_log.ts";
import type { Clock } from "../../mod/core/clock.ts";
import { AppError, badRequest } from "../../mod/core/errors.ts";
import { perm, type RouteDef } from "./route.ts";
import { cursorQuery, readQuery } from "./validate.ts";

const time = z.string().transform((v, ctx) => {
  const ms = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (Number.isNaN(ms)) {
    ctx.addIssue({
      code: "custom",
      message: 'expected an ISO 8601 time such as "2026-01-01T00:00:00Z" or epoch milliseconds',
    });
    return z.NEVER;
  }
  return ms;
});

const TRACE_ID = /^[0-9a-f]{32}$/;

const statsQuery = z.strictObject({
  from: time.optional(),
  to: time.optional(),
  site: z.string().min(1).optional(),
});

const querySchema = z.strictObject({
  from: time.optional(),
  to: time.optional(),
  site: z.string().min(1).optional(),
  client_ip: z.string().min(1).optional(),
  action: z.enum(["pass", "block", "log", "challenge"]).optional(),
  class: z.string().regex(/^[a-z-]+$/, 'expected an attack class such as "sqli"').optional(),
  status: z.coerce.number().int().min(100).max(599).optional(),
  trace_id: z.string().regex(TRACE_ID, "expected 32 lower-case hex characters").optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: cursorQuery.rowId.optional(),
});

/** The dashboard window: at most 31 days, in 1 to 240 buckets, top 1 to 50 keys. */
const MAX_WINDOW_MS = 31 * 86_400_000;
const summarySchema = z.strictObject({
  from: time.optional(),
  to: time.optional(),
  /** Instead of `from`: this many minutes before `to`. */
  minutes: z.coerce.number().int().min(1).max(31 * 1440).optional(),
  buckets: z.coerce.number().int().min(1).max(240).default(60),
  top: z.coerce.number().int().min(1).max(50).default(10),
});

/** The stored record plus its store id. */
function item(row: StoredAccessRecord): Record<string, unknown> {
  const record = JSON.parse(row.record) as Record<string, unknown>;
  return { id: row.id, ...record, time: new Date(row.time).toISOString() };
}

export function logRoutes(accessLog: AccessLog, clock: Clock): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/logs",
      access: perm("read:logs"),
      handler: async (c) => {
        const q = readQuery(c, querySchema);
        const rows = await accessLog.list({
          from: q.from,
          to: q.to,
          siteId: q.site,
          clientIp: q.client_ip,
          action: q.action,
          attackClass: q.class,
          status: q.status,
          traceId: q.trace_id,
          beforeId: q.cursor,
          limit: q.limit + 1,
        });
        const page = rows.slice(0, q.limit);
        const more = rows.length > q.limit;
        return c.json({
          items: page.map(item),
          next_cursor: more && page.length > 0 ? String(page[page.length - 1]!.id) : null,
        });
      },
    },
    {
      method: "GET",
      path: "/api/logs/stats",
      access: perm("read:logs"),
      handler: async (c) => {
        const q = readQuery(c, statsQuery);
        if (q.from !== undefined && q.to !== undefined && q.from > q.to) {
          throw badRequest('Invalid field "from": it is after "to"', "from");
        }
        return c.json({ ...accessLog.stats(), ...(await accessLog.counts(q)) });
      },
    },
    {
      method: "GET",
      path: "/api/logs/summary",
      access: perm("read:logs"),
      handler: async (c) => {
        const q = readQuery(c, summarySchema);
        // The end is exclusive: "now" includes what arrived in the current millisecond.
        const to = q.to ?? clock.now() + 1;
        const from = q.from ?? to - (q.minutes ?? 60) * 60_000;
        if (from >= to || to - from > MAX_WINDOW_MS) {
          throw badRequest(
            'Invalid field "from": expected a time before "to", at most 31 days earlier',
            "from",
          );
        }
        return c.json(await accessLog.summary({ from, to, buckets: q.buckets, top: q.top }));
      },
    },
    {
      method: "GET",
      path: "/api/logs/:traceId",
      access: perm("read:logs"),
      handler: async (c) => {
        const traceId = c.req.param("traceId") ?? "";
        if (!TRACE_ID.test(traceId)) {
          throw badRequest(
            'Invalid field "traceId": expected 32 lower-case hex characters',
            "traceId",
          );
        }
        const row = await accessLog.get(traceId);
        if (!row) throw new AppError(404, "NOT_FOUND", `No access-log record for "${traceId}"`);
        return c.json(item(row));
      },
    },
  ];
}
