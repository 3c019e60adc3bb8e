/**
 * The access-log reader on the production database's deployment-wide table
 * (`access_log_pg.ts`): the same answers as the SQLite queries (`access_log_queries.ts`) over
 * every controller's records. Pages are newest first by the table's id (the order records
 * reached the database), a search reads at most `SEARCH_SCAN` rows a page below its cursor, and
 * ties in the ranked lists are broken by key in byte order (`COLLATE "C"`, as SQLite compares),
 * so both engines answer alike.
 */
import type postgres from "postgres";
import type {
  AccessLogCounts,
  AccessLogFilter,
  AccessLogPage,
  AccessLogSummaryRows,
  TopEntry,
} from "./access_log_queries.ts";
import type { StoredAccessLogRow } from "./access_log_rows.ts";
import { searchParams } from "./access_log_search.ts";
import type { AccessLogReader, PeriodFilter } from "./access_log_reader.ts";
import { sortedClasses } from "./access_log_reader.ts";
import { DEPLOYMENT_LOG_TABLE, searchKey } from "./access_log_pg.ts";

/** `recordClass` (mod/access_log/record_class.ts) in SQL, as `RECORD_CLASS` reads SQLite's rows. */
const RECORD_CLASS = `(CASE WHEN action NOT IN ('block', 'challenge') THEN attack_class
  WHEN last_check = 'engine' THEN COALESCE(attack_class, 'engine')
  ELSE COALESCE(last_check, 'other') END)`;

const COLUMNS =
  "id, trace_id, time, site_id, client_ip, method, host, path, status, action, attack_class, record";

export interface PgReaderOptions {
  /** The site ids a site name stands for (the store's `sites`); the id itself always matches. */
  readonly siteIds?: (site: string) => readonly string[];
  /** Rows one page of a search reads at most (tests make it small). */
  readonly searchScan?: number;
}

type Row = Record<string, unknown>;

/** A row as the SQLite reader answers it (the driver reads BIGINT as text). */
function stored(r: Row): StoredAccessLogRow {
  return {
    id: Number(r["id"]),
    trace_id: String(r["trace_id"]),
    time: Number(r["time"]),
    site_id: r["site_id"] as string | null,
    client_ip: r["client_ip"] as string | null,
    method: r["method"] as string | null,
    host: r["host"] as string | null,
    path: r["path"] as string | null,
    status: r["status"] === null ? null : Number(r["status"]),
    action: String(r["action"]),
    attack_class: r["attack_class"] as string | null,
    record: String(r["record"]),
  };
}

/** The reader over `sql` (a pool whose `search_path` is the deployment's schema). */
export function createPgAccessLogReader(
  sql: postgres.Sql,
  options: PgReaderOptions = {},
): AccessLogReader {
  const t = sql(DEPLOYMENT_LOG_TABLE);
  const none = sql``;
  const and = (cond: boolean, fragment: () => postgres.PendingQuery<postgres.Row[]>) =>
    cond ? sql`AND ${fragment()}` : none;
  const siteIds = (site: string) => [...new Set([site, ...(options.siteIds?.(site) ?? [])])];
  const siteWhere = (site: string | undefined) =>
    and(site !== undefined, () => sql`site_id IN ${sql(siteIds(site!))}`);
  const idRange = async () => {
    const [r] = await sql`SELECT MIN(id) AS lo, MAX(id) AS hi FROM ${t}`;
    const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
    return { lo: num(r?.["lo"]), hi: num(r?.["hi"]) };
  };

  function actionsWhere(filter: AccessLogFilter) {
    const actions = filter.actions ??
      (filter.action !== undefined ? [filter.action] : filter.rateLimited ? [] : undefined);
    if (actions === undefined) return none;
    const listed = actions.length > 0 ? sql`action IN ${sql(actions as string[])}` : sql`FALSE`;
    const limited = filter.rateLimited ? sql`(action = 'block' AND status = 429)` : sql`FALSE`;
    return sql`AND (${listed} OR ${limited})`;
  }

  async function page(filter: AccessLogFilter): Promise<AccessLogPage> {
    // Only a search needs the id range (its bound, and whether older rows remain): a plain page
    // is one round trip.
    const range = filter.search ? await idRange() : { lo: null, hi: null };
    const below = filter.beforeId ?? (range.hi ?? 0) + 1;
    const search = searchParams(filter.search, below, options.searchScan);
    const rows = await sql`
      SELECT ${sql.unsafe(COLUMNS)} FROM ${t} WHERE TRUE
        ${and(filter.from !== undefined, () => sql`time >= ${filter.from!}`)}
        ${and(filter.to !== undefined, () => sql`time <= ${filter.to!}`)}
        ${siteWhere(filter.siteId)}
        ${and(filter.clientIp !== undefined, () => sql`client_ip = ${filter.clientIp!}`)}
        ${actionsWhere(filter)}
        ${
      and(filter.attackClass !== undefined, () =>
        sql`${sql.unsafe(RECORD_CLASS)} = ${filter.attackClass!}`)
    }
        ${and(filter.status !== undefined, () => sql`status = ${filter.status!}`)}
        ${and(filter.traceId !== undefined, () => sql`trace_id = ${filter.traceId!}`)}
        ${and(filter.beforeId !== undefined, () => sql`id < ${filter.beforeId!}`)}
        ${
      and(search.search !== null, () =>
        sql`id >= ${search.floor} AND strpos(search_text, ${searchKey(search.search!)}) > 0`)
    }
      ORDER BY id DESC LIMIT ${filter.limit}`;
    // A search that did not fill the page stopped at its bound while older rows remain.
    const stopped = search.search !== null && rows.length < filter.limit &&
      range.lo !== null && search.floor > range.lo;
    return { rows: rows.map(stored), searchedTo: stopped ? search.floor : null };
  }

  const period = (f: PeriodFilter) =>
    sql`time >= ${f.from} AND time <= ${f.to} ${siteWhere(f.site)}`;

  async function counts(f: PeriodFilter): Promise<AccessLogCounts> {
    const tally = (rows: readonly Row[]) => {
      const out: Record<string, number> = {};
      for (const r of rows) out[String(r["key"])] = Number(r["n"]);
      return out;
    };
    const byAction = await sql`
      SELECT action AS key, COUNT(*)::int AS n FROM ${t} WHERE ${period(f)} GROUP BY action`;
    const byClass = await sql`
      SELECT attack_class AS key, COUNT(*)::int AS n FROM ${t}
      WHERE ${period(f)} AND attack_class IS NOT NULL GROUP BY attack_class`;
    return { byAction: tally(byAction), byClass: tally(byClass) };
  }

  async function top(
    by: "client_ip" | "path",
    f: PeriodFilter,
    limit: number,
  ): Promise<TopEntry[]> {
    const column = sql(by);
    const rows = await sql`
      SELECT ${column} COLLATE "C" AS key, COUNT(*)::int AS requests,
        COUNT(*) FILTER (WHERE action = 'block')::int AS blocked,
        string_agg(DISTINCT attack_class, ',') AS classes, MIN(time) AS first_seen,
        MAX(time) AS last_seen
      FROM ${t} WHERE ${period(f)} AND (action <> 'pass' OR attack_class IS NOT NULL)
      GROUP BY 1 ORDER BY requests DESC, key NULLS FIRST LIMIT ${limit}`;
    return rows.map((r) => ({
      key: r["key"] as string | null,
      requests: Number(r["requests"]),
      blocked: Number(r["blocked"]),
      classes: sortedClasses(r["classes"] as string | null),
      first_seen: Number(r["first_seen"]),
      last_seen: Number(r["last_seen"]),
    }));
  }

  async function summary(
    from: number,
    to: number,
    bucket: number,
    limit: number,
  ): Promise<AccessLogSummaryRows> {
    const range = sql`time >= ${from} AND time < ${to}`;
    const buckets = await sql`
      SELECT ((time - ${from}::bigint) / ${bucket}::bigint)::int AS b, COUNT(*)::int AS requests,
        COUNT(*) FILTER (WHERE action = 'block')::int AS blocked,
        COUNT(*) FILTER (WHERE action = 'challenge')::int AS challenged,
        COUNT(*) FILTER (WHERE action = 'log')::int AS logged
      FROM ${t} WHERE ${range} GROUP BY b`;
    const ranked = async (key: string, where: string) => {
      const rows = await sql`
        SELECT (${sql.unsafe(key)}) COLLATE "C" AS key, COUNT(*)::int AS n FROM ${t}
        WHERE ${range} AND ${sql.unsafe(where)}
        GROUP BY 1 ORDER BY n DESC, key NULLS FIRST LIMIT ${limit}`;
      return rows.map((r) => ({ key: r["key"] as string | null, count: Number(r["n"]) }));
    };
    return {
      buckets: buckets.map((r) => ({
        b: Number(r["b"]),
        requests: Number(r["requests"]),
        blocked: Number(r["blocked"]),
        challenged: Number(r["challenged"]),
        logged: Number(r["logged"]),
      })),
      byClass: await ranked(RECORD_CLASS, "action = 'block'"),
      sites: await ranked("site_id", "action <> 'pass'"),
      paths: await ranked("path", "action <> 'pass'"),
      clients: await ranked("client_ip", "action <> 'pass'"),
    };
  }

  return {
    page,
    async get(traceId) {
      const [r] = await sql`SELECT ${sql.unsafe(COLUMNS)} FROM ${t} WHERE trace_id = ${traceId}`;
      return r === undefined ? undefined : stored(r);
    },
    counts,
    top,
    summary,
  };
}
