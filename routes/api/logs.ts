/**
 * `/api/logs` (`read:logs`): filtered, cursor-paginated access-log records (a site by id or
 * name; actions, the record's class, free text, a trace id in any copied form), one record by
 * trace id with its whole evaluation chain, the classes a record can have, and statistics: the
 * pipeline's counters (queued, written, dropped), the records of a period counted per action and
 * class, and the dashboard's summary of a time range (requests, blocks, classes, top targets).
 */
import { z } from "zod";
import type { AccessLog, StoredAccessRecord } from "../../mod/access_log/access_log.ts";
import { DECIDING_CHECKS, RECORD_CLASSES, recordClass } from "../../mod/access_log/record_class.ts";
import { traceIdIn } from "../../mod/access_log/trace_text.ts";
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

const TRACE_HINT =
  'expected a trace id: 32 hex characters, as on the block page ("traceId: ...") or in a copied link';
const traceText = z.string().transform((v, ctx) => {
  const id = traceIdIn(v);
  if (id === undefined) {
    ctx.addIssue({ code: "custom", message: TRACE_HINT });
    return z.NEVER;
  }
  return id;
});

const ACTIONS = ["pass", "block", "log", "challenge", "rate_limited"] as const;
/** A comma-separated list of actions; `rate_limited` is a block answered 429. */
const actionList = z.string().transform((v, ctx) => {
  const words = v.split(",").map((w) => w.trim().toLowerCase()).filter((w) => w !== "");
  const wrong = words.find((w) => !(ACTIONS as readonly string[]).includes(w));
  if (words.length === 0 || wrong !== undefined) {
    ctx.addIssue({
      code: "custom",
      message: `expected one or more of ${
        ACTIONS.map((a) => `"${a}"`).join(", ")
      }, comma-separated`,
    });
    return z.NEVER;
  }
  return {
    actions: words.filter((w) => w !== "rate_limited"),
    rateLimited: words.includes("rate_limited"),
  };
});

const KNOWN_CLASSES = new Set(RECORD_CLASSES);
/** A class as the list shows it, in any case (`SQLi` is `sqli`). */
const recordClassName = z.string().transform((v, ctx) => {
  const name = v.trim().toLowerCase();
  if (!KNOWN_CLASSES.has(name)) {
    ctx.addIssue({
      code: "custom",
      message:
        'expected a class such as "sqli", "xss" or "ip_list" (GET /api/logs/classes lists them)',
    });
    return z.NEVER;
  }
  return name;
});

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
  action: actionList.optional(),
  class: recordClassName.optional(),
  status: z.coerce.number().int().min(100).max(599).optional(),
  trace_id: traceText.optional(),
  q: z.string().trim().min(1).max(200).optional(),
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

/** The stored record plus its store id and its class (`recordClass`, derived as it is read). */
function item(row: StoredAccessRecord): Record<string, unknown> {
  const record = JSON.parse(row.record);
  return {
    id: row.id,
    ...record,
    time: new Date(row.time).toISOString(),
    class: recordClass(record),
  };
}

const CHECKS = new Set<string>(DECIDING_CHECKS);
const CLASS_ITEMS = RECORD_CLASSES.map((name) => ({
  class: name,
  kind: CHECKS.has(name) ? "check" : "engine",
}));

export function logRoutes(accessLog: AccessLog, clock: Clock): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/logs",
      access: perm("read:logs"),
      handler: async (c) => {
        const q = readQuery(c, querySchema);
        const { rows, searchedTo, source, partial } = await accessLog.page({
          from: q.from,
          to: q.to,
          siteId: q.site,
          clientIp: q.client_ip,
          actions: q.action?.actions,
          rateLimited: q.action?.rateLimited,
          attackClass: q.class,
          status: q.status,
          traceId: q.trace_id,
          search: q.q,
          beforeId: q.cursor,
          limit: q.limit + 1,
        });
        const page = rows.slice(0, q.limit);
        const more = rows.length > q.limit;
        const next = more && page.length > 0 ? page[page.length - 1]!.id : searchedTo;
        return c.json({
          items: page.map(item),
          next_cursor: next === null ? null : String(next),
          // The search read its bound of rows: older ones are searched by the next page.
          ...(q.q === undefined ? {} : { search_stopped: !more && searchedTo !== null }),
          source,
          partial,
        });
      },
    },
    {
      method: "GET",
      path: "/api/logs/classes",
      access: perm("read:logs"),
      handler: (c) => c.json({ items: CLASS_ITEMS }),
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
        const pasted = c.req.param("traceId") ?? "";
        const traceId = traceIdIn(pasted);
        if (traceId === undefined) {
          throw badRequest(`Invalid field "traceId": ${TRACE_HINT}`, "traceId");
        }
        const { row, source, partial } = await accessLog.lookup(traceId);
        if (!row) {
          throw new AppError(404, "NOT_FOUND", `No access-log record for "${traceId}"`, {
            details: { source, partial },
          });
        }
        return c.json({ ...item(row), source, partial });
      },
    },
  ];
}
