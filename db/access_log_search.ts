/**
 * Free-text search over access-log rows: a term found, case-insensitively, in the path or the
 * query (as sent or percent-decoded), the client address, the user agent or the host. SQLite
 * has no percent-decoding, so the match is a function registered on the connection
 * (`waf_log_search`); it reads a row's record text only when the row's columns did not match.
 * Each page of a search reads at most {@link SEARCH_SCAN} rows (newest first, below the cursor):
 * the cost of a page is bounded whatever the table holds, and the next page goes on below
 * (docs/access-logs.md#free-text-search).
 */
import type { SqliteDb as Db } from "./store.ts";

/** Rows one page of a search reads at most. */
export const SEARCH_SCAN = 100_000;
/** The longest search term accepted. */
export const SEARCH_MAX_LENGTH = 200;

/**
 * The condition for `:search` (null: no search), with the scan bound `:floor`. SQLite's own
 * LIKE first leaves out, without a call into JavaScript, the rows that cannot match: those where
 * the term is in no column and in no record text, and nothing is percent-encoded (or a `+`, for
 * a term with a space) that could decode to it. `:like` is null for a term LIKE cannot compare
 * case-insensitively (one with non-ASCII letters): every row in the bound is then called.
 */
export const SEARCH_WHERE = `(:search IS NULL OR (id >= :floor
  AND (:like IS NULL OR path LIKE :like ESCAPE '\\' OR host LIKE :like ESCAPE '\\'
    OR client_ip LIKE :like ESCAPE '\\' OR record LIKE :like_json ESCAPE '\\'
    OR instr(path, '%') > 0 OR instr(record, '%') > 0 OR (:spaced AND instr(record, '+') > 0))
  AND waf_log_search(path, host, client_ip, record, :search)))`;

const ENCODED = /(?:%[0-9a-f]{2})+/gi;

/** `%XX` sequences decoded where they form UTF-8, left as they are where they do not. */
function decoded(s: string, plusIsSpace: boolean): string {
  const text = plusIsSpace ? s.replaceAll("+", " ") : s;
  return text.replace(ENCODED, (m) => {
    try {
      return decodeURIComponent(m);
    } catch {
      return m;
    }
  });
}

function found(value: unknown, term: string, decode: "path" | "query" | "none"): boolean {
  if (typeof value !== "string" || value.length === 0) return false;
  if (value.toLowerCase().includes(term)) return true;
  if (decode === "none" || (value.indexOf("%") < 0 && value.indexOf("+") < 0)) return false;
  return decoded(value, decode === "query").toLowerCase().includes(term);
}

/** The query and user agent of a stored record: compact (an array) or a whole object. */
function queryAndAgent(record: string): [unknown, unknown] {
  try {
    const r = JSON.parse(record);
    return Array.isArray(r) ? [r[3], r[4]] : [r?.query, r?.user_agent];
  } catch {
    return [undefined, undefined];
  }
}

let lastTerm = "";
let lastEscapes = false;
/** Whether JSON writes `term` otherwise (a quote, a backslash, a control character): remembered. */
function jsonEscapes(term: string): boolean {
  if (term !== lastTerm) {
    lastTerm = term;
    lastEscapes = JSON.stringify(term).length !== term.length + 2;
  }
  return lastEscapes;
}

/**
 * Whether a row matches `term` (lower case); what SQLite calls as `waf_log_search`, so its
 * parameters are the SQL function's arguments, in order.
 */
function rowMatches(
  path: unknown,
  host: unknown,
  clientIp: unknown,
  record: unknown,
  term: unknown,
): number {
  if (typeof term !== "string") return 0;
  if (found(path, term, "path") || found(host, term, "none") || found(clientIp, term, "none")) {
    return 1;
  }
  if (typeof record !== "string") return 0;
  // The record's text holds the query and user agent (and more): parsed only when the term, or
  // something percent-encoded that may decode to it, is in there (JSON escapes quotes,
  // backslashes and control characters, so a term with those is looked for after parsing).
  const raw = record.toLowerCase();
  if (
    !raw.includes(term) && raw.indexOf("%") < 0 && raw.indexOf("+") < 0 && !jsonEscapes(term)
  ) return 0;
  const [query, agent] = queryAndAgent(record);
  return found(query, term, "query") || found(agent, term, "none") ? 1 : 0;
}

/**
 * The texts a row's search compares, lower case: its path (as sent and percent-decoded), host,
 * client address, query (as sent and decoded, `+` a space) and user agent; `rowMatches` finds
 * a term exactly when one of them contains it. A copy that cannot call JavaScript per row (the
 * production database) stores them with the row and compares there.
 */
export function searchFields(
  path: unknown,
  host: unknown,
  clientIp: unknown,
  query: unknown,
  agent: unknown,
): string[] {
  const out: string[] = [];
  const add = (value: unknown, decode: "path" | "query" | "none") => {
    if (typeof value !== "string" || value.length === 0) return;
    out.push(value.toLowerCase());
    if (decode === "none" || (value.indexOf("%") < 0 && value.indexOf("+") < 0)) return;
    out.push(decoded(value, decode === "query").toLowerCase());
  };
  add(path, "path");
  add(host, "none");
  add(clientIp, "none");
  add(query, "query");
  add(agent, "none");
  return out;
}

/** The query and user agent of a stored record's text (compact or whole). */
export function recordQueryAndAgent(record: string): [unknown, unknown] {
  return queryAndAgent(record);
}

/** Registers `waf_log_search` on a connection (once per connection, before preparing). */
export function registerSearch(db: Db): void {
  db.function("waf_log_search", { deterministic: true }, rowMatches);
}

const LIKE_SPECIAL = /[\\%_]/g;
const ASCII = /^[\x20-\x7e]*$/;
const like = (s: string) => `%${s.replace(LIKE_SPECIAL, "\\$&")}%`;

export interface SearchParams {
  readonly search: string | null;
  readonly floor: number;
  readonly like: string | null;
  readonly like_json: string | null;
  readonly spaced: number;
}

/** The parameters of {@link SEARCH_WHERE}: no search, or the term over `scan` rows below `below`. */
export function searchParams(
  term: string | undefined,
  below: number,
  scan: number = SEARCH_SCAN,
): SearchParams {
  if (term === undefined || term === "") {
    return { search: null, floor: 0, like: null, like_json: null, spaced: 0 };
  }
  const plain = ASCII.test(term);
  return {
    search: term.toLowerCase(),
    floor: below - scan,
    like: plain ? like(term) : null,
    // As the term appears inside the record's JSON text (quotes and backslashes escaped).
    like_json: plain ? like(JSON.stringify(term).slice(1, -1)) : null,
    spaced: term.includes(" ") ? 1 : 0,
  };
}
