/**
 * Free-text search over access-log rows: a term found, case-insensitively, in the path or the
 * query (as sent or percent-decoded), the client address, the user agent or the host. SQLite
 * has no percent-decoding, so the match is a function registered on the connection
 * (`waf_log_search`); it reads a row's record text only when the row's columns did not match.
 * Each page of a search reads at most {@link SEARCH_SCAN} rows (newest first, below the cursor):
 * the cost of a page is bounded whatever the table holds, and the next page goes on below
 * (docs/access-logs.md#free-text-search).
 */
import type { Db } from "./store.ts";

/** Rows one page of a search reads at most. */
export const SEARCH_SCAN = 100_000;
/** The longest search term accepted. */
export const SEARCH_MAX_LENGTH = 200;

/** The condition for `:search` (null: no search), with the scan bound `:floor`. */
export const SEARCH_WHERE =
  "(:search IS NULL OR (id >= :floor AND waf_log_search(path, host, client_ip, record, :search)))";

const ENCODED = /(?:%[0-9a-f]{2})+/gi;
const JSON_ESCAPED = /["\\\x00-\x1f]/;

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

/** Whether a row matches `term` (lower case); what SQLite calls as `waf_log_search`. */
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
    !raw.includes(term) && raw.indexOf("%") < 0 && raw.indexOf("+") < 0 && !JSON_ESCAPED.test(term)
  ) return 0;
  const [query, agent] = queryAndAgent(record);
  return found(query, term, "query") || found(agent, term, "none") ? 1 : 0;
}

/** Registers `waf_log_search` on a connection (once per connection, before preparing). */
export function registerSearch(db: Db): void {
  db.function("waf_log_search", { deterministic: true }, rowMatches);
}

/** The parameters of {@link SEARCH_WHERE}: no search, or the term over `scan` rows below `below`. */
export function searchParams(
  term: string | undefined,
  below: number,
  scan: number = SEARCH_SCAN,
): { search: string | null; floor: number } {
  if (term === undefined || term === "") return { search: null, floor: 0 };
  return { search: term.toLowerCase(), floor: below - scan };
}
