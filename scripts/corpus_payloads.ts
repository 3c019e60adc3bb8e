/**
 * Payload-corpus mode of `deno task corpus`: each bare payload is placed where a WAF
 * inspects (query parameter, form field, JSON string, User-Agent header, cookie, path
 * segment, multipart field, XML element text escaped as a SOAP client would) and run
 * through the engine in-process; detection is reported per class and placement.
 *
 * By default the parameter and the cookie are named `q` (a search box) and the header is the
 * User-Agent; `--name` and `--header` put the payloads where a class means something else
 * (`--name next --header referer`: where an application takes a redirect target).
 */

import { inspect } from "../engine/inspect.ts";
import type { EngineRequest, Level } from "../engine/types.ts";

interface Payload {
  readonly id: string;
  readonly class: string;
  readonly payload: string;
}

export const PLACEMENTS = [
  "query",
  "form",
  "json",
  "header",
  "cookie",
  "path",
  "multipart",
  "xml",
] as const;
type Placement = typeof PLACEMENTS[number];

const ENCODER = new TextEncoder();
const BASE_HEADERS = [
  ["user-agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0 Safari/537.36"],
  ["accept", "*/*"],
] as const;
/** Characters a header value cannot carry as is (CR, LF, NUL) or beyond Latin-1. */
// deno-lint-ignore no-control-regex -- NUL is one of the characters a header cannot carry
const NOT_HEADER_SAFE = /[\r\n\0]|[^\x00-\xff]/;
/** Characters a cookie value cannot carry unencoded (RFC 6265 cookie-octet). */
const NOT_COOKIE_SAFE = /[^\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]/;

const BOUNDARY = "----corpus7MA4YWxkTrZu0gW";

function escapeXml(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/**
 * Names of what carries the payload: the parameter and cookie (by default `q`, and `comment`
 * for the multipart field), and the header.
 */
export interface PlaceNames {
  readonly param?: string;
  readonly header: string;
}

const DEFAULT_NAMES: PlaceNames = { header: "user-agent" };

/** Builds the request for one placement, or undefined when the payload cannot go there. */
export function place(
  payload: string,
  where: Placement,
  names: PlaceNames = DEFAULT_NAMES,
): EngineRequest | undefined {
  const enc = encodeURIComponent(payload);
  const q = names.param ?? "q";
  switch (where) {
    case "query":
      return { method: "GET", path: "/search", query: `${q}=${enc}`, headers: BASE_HEADERS };
    case "form":
      return {
        method: "POST",
        path: "/search",
        query: "",
        headers: [...BASE_HEADERS, ["content-type", "application/x-www-form-urlencoded"]],
        body: ENCODER.encode(`${q}=${enc}`),
      };
    case "json":
      return {
        method: "POST",
        path: "/api/search",
        query: "",
        headers: [...BASE_HEADERS, ["content-type", "application/json"]],
        body: ENCODER.encode(JSON.stringify({ [q]: payload })),
      };
    case "header":
      if (NOT_HEADER_SAFE.test(payload)) return undefined;
      return {
        method: "GET",
        path: "/",
        query: "",
        headers: names.header === "user-agent"
          ? [["user-agent", payload], ["accept", "*/*"]]
          : [...BASE_HEADERS, [names.header, payload]],
      };
    case "path":
      return { method: "GET", path: `/items/${enc}/view`, query: "", headers: BASE_HEADERS };
    case "multipart": {
      const body =
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${
          names.param ?? "comment"
        }"\r\n\r\n` +
        `${payload}\r\n--${BOUNDARY}--\r\n`;
      return {
        method: "POST",
        path: "/upload",
        query: "",
        headers: [
          ...BASE_HEADERS,
          ["content-type", `multipart/form-data; boundary=${BOUNDARY}`],
        ],
        body: ENCODER.encode(body),
      };
    }
    case "xml":
      return {
        method: "POST",
        path: "/api/soap",
        query: "",
        headers: [...BASE_HEADERS, ["content-type", "text/xml"]],
        body: ENCODER.encode(
          `<?xml version="1.0"?><Envelope><Body><search><${q}>` + escapeXml(payload) +
            `</${q}></search></Body></Envelope>`,
        ),
      };
    case "cookie": {
      const value = NOT_COOKIE_SAFE.test(payload) ? enc : payload;
      return {
        method: "GET",
        path: "/",
        query: "",
        headers: [...BASE_HEADERS, ["cookie", `session=abc123; ${q}=${value}`]],
      };
    }
  }
}

/** What {@link runPayloads} replays and how. */
export interface PayloadRun {
  /** Path of attacks.jsonl. */
  readonly file: string;
  readonly level: Level;
  /** Payloads per class at most (evenly sampled). */
  readonly limit?: number;
  /** Restricts the run to one class, whose misses are listed. */
  readonly only?: string;
  /** The placement whose misses are listed (default `query`). */
  readonly missesIn?: string;
  /** The parameter and cookie name and the header (default `q` and User-Agent). */
  readonly names?: PlaceNames;
}

/**
 * Runs the payload file and prints the class x placement table.
 *
 * @param run the file, level, sampling, class and names
 */
export async function runPayloads(run: PayloadRun): Promise<number> {
  const { file, level, limit, only } = run;
  const missesIn = run.missesIn ?? "query";
  const names = run.names ?? DEFAULT_NAMES;
  const byClass = new Map<string, Payload[]>();
  for (const line of (await Deno.readTextFile(file)).split("\n")) {
    if (line.trim().length === 0) continue;
    const p = JSON.parse(line) as Payload;
    if (only !== undefined && p.class !== only) continue;
    const list = byClass.get(p.class) ?? [];
    list.push(p);
    byClass.set(p.class, list);
  }
  const rows: string[] = [];
  const misses: string[] = [];
  for (const [cls, all] of [...byClass].sort((a, b) => b[1].length - a[1].length)) {
    const list = sample(all, limit);
    const cells: string[] = [];
    let skipped = 0;
    for (const where of PLACEMENTS) {
      let hit = 0;
      let total = 0;
      for (const p of list) {
        const req = place(p.payload, where, names);
        if (req === undefined) {
          skipped++;
          continue;
        }
        total++;
        if (inspect(req, { level }).blocking !== undefined) hit++;
        else if (where === missesIn) {
          misses.push(`${cls} ${JSON.stringify(p.payload).slice(0, 200)}`);
        }
      }
      cells.push(total === 0 ? "n/a" : `${((100 * hit) / total).toFixed(1)}%`);
    }
    rows.push(`| ${cls} | ${list.length} | ${cells.join(" | ")} | ${skipped} |`);
  }
  if (only !== undefined) { for (const m of misses) console.log(`miss ${m}`); }
  console.log(`| class | n | ${PLACEMENTS.join(" | ")} | header skipped |`);
  console.log(`|---|---:|${PLACEMENTS.map(() => "---:").join("|")}|---:|`);
  for (const r of rows) console.log(r);
  return 0;
}

function sample<T>(list: readonly T[], limit: number | undefined): readonly T[] {
  if (limit === undefined || list.length <= limit) return list;
  const step = list.length / limit;
  return Array.from({ length: limit }, (_, i) => list[Math.floor(i * step)]!);
}
