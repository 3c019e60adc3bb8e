/**
 * The access log's queries: listing, lookup by trace id, counts, top lists and the dashboard's
 * figures, each after writing what is queued, so a trace id just answered is found at once. They
 * read through the log's views (`log_views.ts`): this controller's records, or in the production
 * profile the deployment's, and each answer says which (`source`, `partial`).
 */
import type { AccessLogRepo } from "../../db/access_log_repo.ts";
import type { AccessLogFilter, TopEntry } from "../../db/access_log_queries.ts";
import type { AccessLogReader } from "../../db/access_log_reader.ts";
import type { Clock } from "../core/clock.ts";
import type { LogViews, SourceOf } from "./log_views.ts";

const DAY_MS = 86_400_000;

export interface AccessLogQueriesDeps {
  /** This controller's queries (on the caller's connection). */
  readonly repo: AccessLogRepo;
  /** Which records the answers read (this controller's, or the deployment's). */
  readonly views: LogViews;
  readonly clock: Clock;
  /** Writes what is queued; resolves once it is in the store. */
  readonly flush: () => Promise<unknown>;
}

/** The dashboard's figures: `buckets` equal slices of [from, to), and top lists. */
async function summarise(
  reader: AccessLogReader,
  range: { from: number; to: number; buckets: number; top: number },
) {
  const bucketMs = Math.max(1, Math.ceil((range.to - range.from) / range.buckets));
  const rows = await reader.summary(range.from, range.to, bucketMs, range.top);
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

/** The top entries of a period, and where they were read. */
export interface TopAnswer extends SourceOf {
  readonly items: TopEntry[];
}

export function createAccessLogQueries(deps: AccessLogQueriesDeps) {
  const { repo, views, clock, flush } = deps;
  /** One record, or undefined, and where it was looked for. */
  async function lookup(traceId: string) {
    await flush();
    const { value, source, partial } = await views.get(traceId);
    return { row: value, source, partial };
  }
  return {
    /** This controller's own rows, after writing what is queued (tests, diagnostics). */
    async list(filter: AccessLogFilter) {
      await flush();
      return repo.list(filter);
    },
    /** A page, where a search stopped at its bound (the cursor to go on below), and its source. */
    async page(filter: AccessLogFilter) {
      await flush();
      const { value, source, partial } = await views.read((r) => r.page(filter));
      return { ...value, source, partial };
    },
    /** One record, or undefined. */
    get: async (traceId: string) => (await lookup(traceId)).row,
    lookup,
    /**
     * Records per action and attack class over a period (default: the last 24 hours), after
     * writing what is queued; `site` is a site's id or name.
     */
    async counts(filter: { from?: number; to?: number; site?: string }) {
      await flush();
      const to = filter.to ?? clock.now();
      const from = filter.from ?? to - DAY_MS;
      const { value, source, partial } = await views.read((r) =>
        r.counts({ from, to, site: filter.site })
      );
      const total = Object.values(value.byAction).reduce((a, b) => a + b, 0);
      return {
        period: { from: new Date(from).toISOString(), to: new Date(to).toISOString() },
        ...(filter.site === undefined ? {} : { site: filter.site }),
        total,
        by_action: value.byAction,
        by_class: value.byClass,
        source,
        partial,
      };
    },
    /** The most hostile client addresses or paths of a period, after writing what is queued. */
    async top(
      by: "client_ip" | "path",
      filter: { from: number; to: number; site?: string },
      limit: number,
    ): Promise<TopAnswer> {
      await flush();
      const { value, source, partial } = await views.read((r) => r.top(by, filter, limit));
      return { items: value, source, partial };
    },
    /** The dashboard's figures: `buckets` equal slices of [from, to), and top lists. */
    async summary(range: { from: number; to: number; buckets: number; top: number }) {
      await flush();
      const { value, source, partial } = await views.read((r) => summarise(r, range));
      return { ...value, source, partial };
    },
  };
}
