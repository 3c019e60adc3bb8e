/**
 * The access log's queries: listing, lookup by trace id, counts, top lists and the dashboard's
 * figures, each after writing what is queued, so a trace id just answered is found at once.
 */
import type { AccessLogRepo } from "../../db/access_log_repo.ts";
import type { AccessLogFilter } from "../../db/access_log_queries.ts";
import type { Clock } from "../core/clock.ts";

const DAY_MS = 86_400_000;

export interface AccessLogQueriesDeps {
  /** Queries (on the caller's connection). */
  readonly repo: AccessLogRepo;
  readonly clock: Clock;
  /** Writes what is queued; resolves once it is in the store. */
  readonly flush: () => Promise<unknown>;
}

/** The dashboard's figures: `buckets` equal slices of [from, to), and top lists. */
function summarise(
  repo: AccessLogRepo,
  range: { from: number; to: number; buckets: number; top: number },
) {
  const bucketMs = Math.max(1, Math.ceil((range.to - range.from) / range.buckets));
  const rows = repo.summary(range.from, range.to, bucketMs, range.top);
  const byBucket = new Map(rows.buckets.map((r) => [r.b, r]));
  const series = Array.from({ length: range.buckets }, (_, b) => {
    const r = byBucket.get(b);
    return {
      time: new Date(range.from + b * bucketMs).toISOString(),
      requests: r?.requests ?? 0,
      blocked: r?.blocked ?? 0,
      challenged: r?.challenged ?? 0,
      logged: r?.logged ?? 0,
    };
  });
  const sum = (k: "requests" | "blocked" | "challenged" | "logged") =>
    series.reduce((n, s) => n + s[k], 0);
  return {
    from: new Date(range.from).toISOString(),
    to: new Date(range.to).toISOString(),
    bucket_ms: bucketMs,
    totals: {
      requests: sum("requests"),
      blocked: sum("blocked"),
      challenged: sum("challenged"),
      logged: sum("logged"),
    },
    series,
    blocked_by_class: rows.byClass.map((r) => ({ class: r.key, count: r.count })),
    top_sites: rows.sites.map((r) => ({ site_id: r.key, count: r.count })),
    top_paths: rows.paths.map((r) => ({ path: r.key, count: r.count })),
    top_clients: rows.clients.map((r) => ({ client_ip: r.key, count: r.count })),
  };
}

export function createAccessLogQueries(deps: AccessLogQueriesDeps) {
  const { repo, clock, flush } = deps;
  return {
    /** Store queries, after writing what is queued so a fresh trace id is found at once. */
    async list(filter: AccessLogFilter) {
      await flush();
      return repo.list(filter);
    },
    /** {@link list}, and where a search stopped at its bound (the cursor to go on below). */
    async page(filter: AccessLogFilter) {
      await flush();
      return repo.page(filter);
    },
    async get(traceId: string) {
      await flush();
      return repo.get(traceId);
    },
    /**
     * Records per action and attack class over a period (default: the last 24 hours), after
     * writing what is queued; `site` is a site's id or name.
     */
    async counts(filter: { from?: number; to?: number; site?: string }) {
      await flush();
      const to = filter.to ?? clock.now();
      const from = filter.from ?? to - DAY_MS;
      const { byAction, byClass } = repo.counts({ from, to, site: filter.site });
      const total = Object.values(byAction).reduce((a, b) => a + b, 0);
      return {
        period: { from: new Date(from).toISOString(), to: new Date(to).toISOString() },
        ...(filter.site === undefined ? {} : { site: filter.site }),
        total,
        by_action: byAction,
        by_class: byClass,
      };
    },
    /** The most hostile client addresses or paths of a period, after writing what is queued. */
    async top(
      by: "client_ip" | "path",
      filter: { from: number; to: number; site?: string },
      limit: number,
    ) {
      await flush();
      return repo.top(by, filter, limit);
    },
    /** The dashboard's figures: `buckets` equal slices of [from, to), and top lists. */
    async summary(range: { from: number; to: number; buckets: number; top: number }) {
      await flush();
      return summarise(repo, range);
    },
  };
}
