/**
 * Access-log rows as text, the way the data plane hands them over: two lines per row, the
 * indexed columns as a JSON array, then the record as the store keeps it. A batch is one
 * string, which `postMessage` copies as a block of bytes (a data-plane worker to the main
 * thread, the main thread to the writer thread), where an array of row objects is cloned field
 * by field and the records themselves would be cloned object by object (docs/data-plane.md,
 * "Workers"). Neither line can hold a raw line break: `JSON.stringify` escapes them.
 *
 * The record is stored compactly: a JSON array of the record's fields that are not columns
 * ({@link RECORD_FIELDS}, in that order), without the field names and without the nine values the
 * columns already hold, so a row has fewer bytes to serialise, copy and insert
 * (docs/bench/2026-11-26-access-log-record-compact.md). Every read of the store makes the whole
 * record's JSON again ({@link expandRecord}: the same text `JSON.stringify(record)` gave), so
 * nothing that reads rows sees the difference; a record stored as a JSON object (rows written
 * before, `insertBatch`) is read as it is. The store reads this text through {@link lineFormat}, passed down to
 * `createAccessLogRepo`: db/ does not import it.
 *
 * @example
 * ```ts
 * const repo = createAccessLogRepo(db, lineFormat);
 * repo.insertLines(recordLines(record)); // the data plane's record, as one row's two lines
 * parseRowLines(recordLines(record)); // the row, its record whole
 * ```
 */
import {
  type AccessLogFormat,
  type AccessLogRow,
  type IndexedColumns,
  indexedColumns,
  type RecordColumns,
} from "../../db/access_log_rows.ts";

/**
 * The record's fields, in the order of its JSON: the order `JSON.stringify` gave the data plane's
 * record (`ArrivingRecord`, `record.ts`: what a request carries first, then
 * what the WAF decides and measures), which is the text the store kept before records were
 * compact and what every read gives back.
 */
const RECORD_FIELDS = [
  "trace_id",
  "time",
  "peer_ip",
  "proto",
  "method",
  "host",
  "path",
  "query",
  "user_agent",
  "site_id",
  "site",
  "client_ip",
  "status",
  "action",
  "chain",
  "finding",
  "findings",
  "upstream",
  "bytes_in",
  "bytes_out",
  "latency_us",
] as const;

/**
 * The columns' text values that SQLite does not give back as they were: a NUL cuts the text
 * read back there, and a lone surrogate becomes U+FFFD. Such a value (a refused request's raw
 * target, method or Host can hold a NUL) is kept in the compact record too.
 */
function keptByColumn(s: string | null): boolean {
  return s === null || (s.indexOf("\0") < 0 && s.isWellFormed());
}

/**
 * The column values a compact record must hold itself, or undefined (nearly always). Five short
 * scans written out, not a loop over the names, which cost more
 * (docs/bench/2026-11-26-access-log-record-compact.md).
 */
function unkeptColumns(r: CompactSource): Record<string, string> | undefined {
  if (
    keptByColumn(r.path) && keptByColumn(r.host) && keptByColumn(r.method) &&
    keptByColumn(r.client_ip) && keptByColumn(r.site_id)
  ) return undefined;
  const out: Record<string, string> = {};
  if (!keptByColumn(r.site_id)) out.site_id = r.site_id!;
  if (!keptByColumn(r.client_ip)) out.client_ip = r.client_ip;
  if (!keptByColumn(r.method)) out.method = r.method;
  if (!keptByColumn(r.host)) out.host = r.host;
  if (!keptByColumn(r.path)) out.path = r.path;
  return out;
}

/** What a compact record is made of: the record's fields the row's columns do not hold. */
export interface CompactSource {
  readonly site_id: string | null;
  readonly client_ip: string;
  readonly method: string;
  readonly host: string;
  readonly path: string;
  readonly site: string | null;
  readonly peer_ip: string;
  readonly proto: string;
  readonly query: string;
  readonly user_agent: string | null;
  readonly chain: readonly { check: string; result: string; us: number; rule?: string }[];
  readonly finding: unknown;
  readonly findings: number;
  readonly upstream: string | null;
  readonly bytes_in: number | null;
  readonly bytes_out: number | null;
  readonly latency_us: { total: number; waf: number; upstream: number | null };
  readonly inspection?: string;
}

/**
 * A record's compact JSON: `[site, peer_ip, proto, query, user_agent, chain, finding, findings,
 * upstream, bytes_in, bytes_out, total, waf, upstream µs]`, each chain entry as
 * `[check, result, us]` (`rule` fourth when there is one); a fifteenth element, an object, holds
 * the columns' values SQLite would not give back as they are (a NUL, a lone surrogate) and the
 * record's `inspection` flag, when there are any.
 */
export function compactRecord(r: CompactSource): string {
  // Pushed, not preallocated: a packed array, never a holey one.
  const chain: unknown[][] = [];
  for (const e of r.chain) {
    chain.push(
      e.rule === undefined ? [e.check, e.result, e.us] : [e.check, e.result, e.us, e.rule],
    );
  }
  const l = r.latency_us;
  const unkept = unkeptColumns(r);
  const compact = [
    r.site,
    r.peer_ip,
    r.proto,
    r.query,
    r.user_agent,
    chain,
    r.finding,
    r.findings,
    r.upstream,
    r.bytes_in,
    r.bytes_out,
    l.total,
    l.waf,
    l.upstream,
  ];
  if (r.inspection !== undefined) compact.push({ ...unkept, inspection: r.inspection });
  else if (unkept !== undefined) compact.push(unkept);
  return JSON.stringify(compact);
}

/**
 * The record's JSON as it was serialised, from a row's columns and its stored record: a compact
 * record (an array, see above) made whole, anything else (an object) as it is.
 */
export function expandRecord(c: RecordColumns, stored: string): string {
  if (stored.charCodeAt(0) !== 0x5b /* [ */) return stored;
  const a = JSON.parse(stored);
  // Column values SQLite would not have given back as they were, kept in the record itself.
  const x = a.length > 14 ? a[14] as Partial<RecordColumns> & { inspection?: string } : undefined;
  const whole: Record<string, unknown> = {
    trace_id: c.trace_id,
    time: c.time,
    peer_ip: a[1],
    proto: a[2],
    method: x?.method ?? c.method,
    host: x?.host ?? c.host,
    path: x?.path ?? c.path,
    query: a[3],
    user_agent: a[4],
    site_id: x?.site_id ?? c.site_id,
    site: a[0],
    client_ip: x?.client_ip ?? c.client_ip,
    status: c.status,
    action: c.action,
    chain: (a[5] as unknown[][]).map(chainEntry),
    finding: a[6],
    findings: a[7],
    upstream: a[8],
    bytes_in: a[9],
    bytes_out: a[10],
    latency_us: { total: a[11], waf: a[12], upstream: a[13] },
  };
  if (x?.inspection !== undefined) whole.inspection = x.inspection;
  return JSON.stringify(whole);
}

/** A chain entry of a compact record as the record's object. */
function chainEntry(e: unknown[]): unknown {
  return e.length === 3
    ? { check: e[0], result: e[1], us: e[2] }
    : { check: e[0], result: e[1], us: e[2], rule: e[3] };
}

/**
 * A record's JSON as the store keeps it: compact when it is a whole record whose columns agree
 * with the row's (what the data plane writes), else as it is.
 */
function storedForm(r: AccessLogRow): string {
  if (r.record.charCodeAt(0) !== 0x7b /* { */) return r.record;
  const o = JSON.parse(r.record);
  const keys = Object.keys(o);
  // The fields in their order, and the inspection flag last when the record has one.
  const flagged = keys.length === RECORD_FIELDS.length + 1 && keys.at(-1) === "inspection";
  const whole = (keys.length === RECORD_FIELDS.length || flagged) &&
    RECORD_FIELDS.every((k, i) => k === keys[i]);
  if (!whole || !Array.isArray(o.chain) || typeof o.latency_us !== "object" || !o.latency_us) {
    return r.record;
  }
  const compact = compactRecord(o);
  // Only when it reads back as the same text (a chain entry with other fields would not).
  return expandRecord(r, compact) === r.record ? compact : r.record;
}

/** A row's two lines. */
export function rowLines(r: AccessLogRow): string {
  return JSON.stringify(indexedColumns(r)) + "\n" + storedForm(r) + "\n";
}

/** Calls `fn` with each row's parsed columns and its stored record, in a batch of {@link rowLines}. */
export function eachRowLine(
  text: string,
  fn: (columns: IndexedColumns, record: string) => void,
): void {
  let at = 0;
  while (at < text.length) {
    const a = text.indexOf("\n", at);
    const b = text.indexOf("\n", a + 1);
    if (a < 0 || b < 0) break;
    fn(JSON.parse(text.slice(at, a)), text.slice(a + 1, b));
    at = b + 1;
  }
}

/** The rows of a batch of {@link rowLines}, their records whole. */
export function parseRowLines(text: string): AccessLogRow[] {
  const rows: AccessLogRow[] = [];
  eachRowLine(text, (c, record) => {
    const row = {
      trace_id: c[0],
      time: c[1],
      site_id: c[2],
      client_ip: c[3],
      method: c[4],
      host: c[5],
      path: c[6],
      status: c[7],
      action: c[8],
      attack_class: c[9],
      record,
    };
    row.record = expandRecord(row, record);
    rows.push(row);
  });
  return rows;
}

/** The line format as the store reads it (`createAccessLogRepo(db, lineFormat)`). */
export const lineFormat: AccessLogFormat = { eachRow: eachRowLine, expand: expandRecord };

/**
 * How many rows of a batch of {@link rowLines} each site (its name, `""`: no site matched) and
 * action has: what the write queue counts when rows it could not keep are lost (a rare path,
 * so it parses; the request path never calls it).
 */
export function tallyRows(text: string): Array<[site: string, action: string, n: number]> {
  const by = new Map<string, [string, string, number]>();
  eachRowLine(text, (c, record) => {
    const site = siteOf(record);
    const key = `${site}\n${c[8]}`;
    const t = by.get(key);
    if (t === undefined) by.set(key, [site, c[8], 1]);
    else t[2]++;
  });
  return [...by.values()];
}

/** The site name a stored record holds: the first element of a compact one, else its field. */
function siteOf(record: string): string {
  try {
    const r = JSON.parse(record);
    const site = Array.isArray(r) ? r[0] : r?.site;
    return typeof site === "string" ? site : "";
  } catch {
    return "";
  }
}
