/**
 * The access-log queries the product makes (the attack log's pages and search, one record, the
 * counts and top lists of a period, the dashboard's figures) as one interface with two engines:
 * this controller's SQLite table (`access_log_queries.ts`) and the production database's
 * deployment-wide table (`access_log_pg_queries.ts`). Both answer the same rows in the same
 * order; one contract test suite runs against both (tests/db/access_log_reader_test.ts).
 */
import type {
  AccessLogCounts,
  AccessLogFilter,
  AccessLogPage,
  AccessLogSummaryRows,
  TopEntry,
} from "./access_log_queries.ts";
import type { StoredAccessLogRow } from "./access_log_rows.ts";

/** A period, optionally of one site (its id or name). */
export interface PeriodFilter {
  readonly from: number;
  readonly to: number;
  readonly site?: string;
}

export interface AccessLogReader {
  /** The newest rows that match, below the cursor, and where a search stopped at its bound. */
  page(filter: AccessLogFilter): Promise<AccessLogPage>;
  get(traceId: string): Promise<StoredAccessLogRow | undefined>;
  /** Records per action and per attack class in [from, to]. */
  counts(filter: PeriodFilter): Promise<AccessLogCounts>;
  /** The most hostile client addresses or paths in [from, to]; `classes` sorted. */
  top(by: "client_ip" | "path", filter: PeriodFilter, limit: number): Promise<TopEntry[]>;
  /** Counts per bucket of `bucket` ms from `from` in [from, to), and the top keys. */
  summary(from: number, to: number, bucket: number, limit: number): Promise<AccessLogSummaryRows>;
}

/** The classes of a top entry in one order whatever the engine ("sqli,xss"). */
export function sortedClasses(classes: string | null): string | null {
  return classes === null ? null : classes.split(",").sort().join(",");
}

/** The SQLite queries (synchronous, on the caller's connection) as a reader. */
export function sqliteAccessLogReader(repo: {
  page(filter: AccessLogFilter): AccessLogPage;
  get(traceId: string): StoredAccessLogRow | undefined;
  counts(filter: PeriodFilter): AccessLogCounts;
  top(by: "client_ip" | "path", filter: PeriodFilter, limit: number): TopEntry[];
  summary(from: number, to: number, bucket: number, limit: number): AccessLogSummaryRows;
}): AccessLogReader {
  return {
    page: (filter) => Promise.resolve().then(() => repo.page(filter)),
    get: (traceId) => Promise.resolve().then(() => repo.get(traceId)),
    counts: (filter) => Promise.resolve().then(() => repo.counts(filter)),
    top: (by, filter, limit) =>
      Promise.resolve().then(() =>
        repo.top(by, filter, limit).map((e) => ({ ...e, classes: sortedClasses(e.classes) }))
      ),
    summary: (from, to, bucket, limit) =>
      Promise.resolve().then(() => repo.summary(from, to, bucket, limit)),
  };
}
