/**
 * SQL for reading access logs: filtered pages (by the record's class too, and free text), lookup
 * by trace id, counts and top lists of a period, and the dashboard's figures. Records come back
 * whole (`AccessLogFormat.expand`).
 */
import type { SqliteDb as Db } from "./store.ts";
import { type AccessLogFormat, expandRows, type StoredAccessLogRow } from "./access_log_rows.ts";
import { registerSearch, SEARCH_WHERE, searchParams } from "./access_log_search.ts";

export interface AccessLogFilter {
  readonly from?: number;
  readonly to?: number;
  /** A site's id or name. */
  readonly siteId?: string;
  readonly clientIp?: string;
  readonly action?: string;
  /** Any of these actions (`pass`, `block`, `log`, `challenge`); instead of `action`. */
  readonly actions?: readonly string[];
  /** Also blocks answered 429 (a rate limit), whatever `actions` holds. */
  readonly rateLimited?: boolean;
  /** The record's class as `mod/access_log/record_class.ts` derives it (see {@link RECORD_CLASS}). */
  readonly attackClass?: string;
  readonly status?: number;
  readonly traceId?: string;
  /** Free text (see `access_log_search.ts`): bounded to `SEARCH_SCAN` rows a page. */
  readonly search?: string;
  /** Rows with an id below this one (newest first). */
  readonly beforeId?: number;
  readonly limit: number;
}

/** A page of rows, and where a search stopped at its bound (the cursor to go on below), if it did. */
export interface AccessLogPage {
  readonly rows: StoredAccessLogRow[];
  readonly searchedTo: number | null;
}

/** The last chain entry's check of a stored record: compact (an array) or a whole object. */
const LAST_CHECK = `(CASE WHEN substr(record, 1, 1) = '[' THEN json_extract(record, '$[5][#-1][0]')
  ELSE json_extract(record, '$.chain[#-1].check') END)`;

/**
 * `recordClass` (mod/access_log/record_class.ts) in SQL, read from the row: the deciding check of
 * a block or challenge (the finding's class when the engine decided), else the finding's class.
 * Only blocks and challenges read the record's text.
 */
export const RECORD_CLASS = `(CASE WHEN action NOT IN ('block', 'challenge') THEN attack_class
  WHEN ${LAST_CHECK} = 'engine' THEN COALESCE(attack_class, 'engine')
  ELSE COALESCE(${LAST_CHECK}, 'other') END)`;

/** Access-log records of a period, counted per action and per attack class. */
export interface AccessLogCounts {
  readonly byAction: Record<string, number>;
  readonly byClass: Record<string, number>;
}

/** The most hostile client addresses or paths of a period (see `top`). */
export interface TopEntry {
  readonly key: string | null;
  readonly requests: number;
  readonly blocked: number;
  /** Comma-separated attack classes seen. */
  readonly classes: string | null;
  readonly first_seen: number;
  readonly last_seen: number;
}

export interface AccessLogSummaryRows {
  readonly buckets: readonly {
    b: number;
    requests: number;
    blocked: number;
    challenged: number;
    logged: number;
  }[];
  readonly byClass: readonly { key: string | null; count: number }[];
  readonly sites: readonly { key: string | null; count: number }[];
  readonly paths: readonly { key: string | null; count: number }[];
  readonly clients: readonly { key: string | null; count: number }[];
}

/** The dashboard's figures over a time range (served by the time index). */
function createSummaryQuery(db: Db) {
  // "Attacked" means any request the WAF did not simply pass (blocked, challenged, or logged in
  // monitor mode).
  const range = "time >= :from AND time < :to";
  const buckets = db.prepare(
    `SELECT CAST((time - :from) / :bucket AS INTEGER) AS b, COUNT(*) AS requests,
       SUM(action = 'block') AS blocked, SUM(action = 'challenge') AS challenged,
       SUM(action = 'log') AS logged
     FROM access_logs WHERE ${range} GROUP BY b`,
  );
  const ranked = (column: string, where = "action != 'pass'") =>
    db.prepare(
      `SELECT ${column} AS key, COUNT(*) AS n FROM access_logs
       WHERE ${range} AND ${where} GROUP BY ${column} ORDER BY n DESC, key LIMIT :limit`,
    );
  // By the record's class, as the monitor's rollups count blocks (`RECORD_CLASS`).
  const blockedByClass = ranked(RECORD_CLASS, "action = 'block'");
  const topSites = ranked("site_id");
  const topPaths = ranked("path");
  const topClients = ranked("client_ip");
  /** Counts per bucket of `bucket` ms from `from`, and the top keys of attacked requests. */
  return (from: number, to: number, bucket: number, limit: number): AccessLogSummaryRows => {
    const args = { from, to, limit };
    const topOf = (q: typeof blockedByClass) =>
      (q.all(args) as { key: string | null; n: number }[]).map((r) => ({
        key: r.key,
        count: r.n,
      }));
    return {
      buckets: buckets.all({ from, to, bucket }) as unknown as AccessLogSummaryRows["buckets"],
      byClass: topOf(blockedByClass),
      sites: topOf(topSites),
      paths: topOf(topPaths),
      clients: topOf(topClients),
    };
  };
}

/** `searchScan`: rows one page of a search reads at most (`SEARCH_SCAN`; tests make it small). */
export function createAccessLogQueryRepo(
  db: Db,
  format: AccessLogFormat,
  options: { searchScan?: number } = {},
) {
  registerSearch(db);
  const list = db.prepare(
    `SELECT * FROM access_logs
     WHERE (:from IS NULL OR time >= :from) AND (:to IS NULL OR time <= :to)
       AND (:site IS NULL OR site_id = :site OR site_id = (SELECT id FROM sites WHERE name = :site))
       AND (:client IS NULL OR client_ip = :client)
       AND (:actions IS NULL OR action IN (SELECT value FROM json_each(:actions))
         OR (:rate_limited AND action = 'block' AND status = 429))
       AND (:class IS NULL OR ${RECORD_CLASS} = :class)
       AND (:status IS NULL OR status = :status) AND (:trace IS NULL OR trace_id = :trace)
       AND (:before IS NULL OR id < :before) AND ${SEARCH_WHERE}
     ORDER BY id DESC LIMIT :limit`,
  );
  const idRange = db.prepare(
    "SELECT (SELECT MIN(id) FROM access_logs) AS lo, (SELECT MAX(id) FROM access_logs) AS hi",
  );
  // Counts over a period: the time index bounds the scan; a site is matched by id or name.
  const periodWhere = `time >= :from AND time <= :to
       AND (:site IS NULL OR site_id = :site OR site_id = (SELECT id FROM sites WHERE name = :site))`;
  const byAction = db.prepare(
    `SELECT action AS key, COUNT(*) AS n FROM access_logs WHERE ${periodWhere} GROUP BY action`,
  );
  const byClass = db.prepare(
    `SELECT attack_class AS key, COUNT(*) AS n FROM access_logs
     WHERE ${periodWhere} AND attack_class IS NOT NULL GROUP BY attack_class`,
  );
  // Hostile: anything blocked, challenged or logged, or carrying an attack class.
  const top = (column: "client_ip" | "path") =>
    db.prepare(
      `SELECT ${column} AS key, COUNT(*) AS requests, SUM(action = 'block') AS blocked,
         GROUP_CONCAT(DISTINCT attack_class) AS classes, MIN(time) AS first_seen,
         MAX(time) AS last_seen
       FROM access_logs WHERE ${periodWhere} AND (action <> 'pass' OR attack_class IS NOT NULL)
       GROUP BY ${column} ORDER BY requests DESC, key LIMIT :limit`,
    );
  const topBy = { client_ip: top("client_ip"), path: top("path") };
  const byTrace = db.prepare("SELECT * FROM access_logs WHERE trace_id = ?");
  return {
    /** The newest rows that match, below the cursor. */
    list(filter: AccessLogFilter): StoredAccessLogRow[] {
      return this.page(filter).rows;
    },
    /** {@link list}, and where a search stopped at its bound. */
    page(filter: AccessLogFilter): AccessLogPage {
      const range = idRange.get() as { lo: number | null; hi: number | null };
      const below = filter.beforeId ?? (range.hi ?? 0) + 1;
      const search = searchParams(filter.search, below, options.searchScan);
      const actions = filter.actions ??
        (filter.action !== undefined ? [filter.action] : filter.rateLimited ? [] : undefined);
      const rows = list.all({
        from: filter.from ?? null,
        to: filter.to ?? null,
        site: filter.siteId ?? null,
        client: filter.clientIp ?? null,
        actions: actions === undefined ? null : JSON.stringify(actions),
        rate_limited: filter.rateLimited ? 1 : 0,
        class: filter.attackClass ?? null,
        status: filter.status ?? null,
        trace: filter.traceId ?? null,
        before: filter.beforeId ?? null,
        ...search,
        limit: filter.limit,
      }) as unknown as StoredAccessLogRow[];
      // A search that did not fill the page stopped at its bound while older rows remain.
      const stopped = search.search !== null && rows.length < filter.limit &&
        range.lo !== null && search.floor > range.lo;
      return { rows: expandRows(format, rows), searchedTo: stopped ? search.floor : null };
    },
    /** Records per action and per attack class in [from, to], optionally of one site (id or name). */
    counts(filter: { from: number; to: number; site?: string }): AccessLogCounts {
      const params = { from: filter.from, to: filter.to, site: filter.site ?? null };
      const tally = (rows: unknown[]) => {
        const out: Record<string, number> = {};
        for (const r of rows as { key: string; n: number }[]) out[r.key] = r.n;
        return out;
      };
      return { byAction: tally(byAction.all(params)), byClass: tally(byClass.all(params)) };
    },
    /** The most hostile client addresses or paths in [from, to], optionally of one site. */
    top(
      by: "client_ip" | "path",
      filter: { from: number; to: number; site?: string },
      limit: number,
    ): TopEntry[] {
      const params = { from: filter.from, to: filter.to, site: filter.site ?? null, limit };
      return topBy[by].all(params) as unknown as TopEntry[];
    },
    get(traceId: string): StoredAccessLogRow | undefined {
      const row = byTrace.get(traceId) as StoredAccessLogRow | undefined;
      return row && expandRows(format, [row])[0];
    },
    summary: createSummaryQuery(db),
  };
}
