/**
 * Splits an {@link EngineRequest} into the attacker-controlled values the detectors judge.
 *
 * Values stay raw (still percent-encoded where the wire format encodes them); decoding is
 * the normaliser's job, so detectors that judge the encoding itself still can. Nothing here
 * throws: malformed escapes, invalid JSON or XML, broken multipart and binary bodies degrade
 * to fewer or coarser inputs. The readers for the target are in `extract_url.ts`, those for
 * bodies in `extract_body.ts`.
 */

import type { EngineRequest, Input } from "./types.ts";
import { MAX_QUERY_INPUTS, push } from "./extract_push.ts";
import { addPairs, addPath, safeDecodeName } from "./extract_url.ts";
import { isPlainSegment, unusualInStandard } from "./char_classes.ts";
import { addBody, addGraphqlQuery, GRAPHQL_PATH } from "./extract_body.ts";

export { MAX_INPUTS } from "./extract_push.ts";

/**
 * Headers whose values browsers and clients fill with a fixed grammar (media ranges,
 * language tags, encodings, numbers, validators, client hints). Inspecting them costs time
 * on every request and only produces false positives (`q=0.9`, quoted brand lists). They are
 * still inspected when their value contains characters that grammar never needs, so a payload
 * smuggled into `Accept` is not invisible. Everything else - User-Agent, Referer, Origin,
 * X-Forwarded-For and other `x-*` headers, custom headers - is inspected because applications
 * log, echo or parse them.
 */
const STANDARD_HEADERS: ReadonlySet<string> = new Set([
  "accept",
  "accept-encoding",
  "accept-language",
  "accept-charset",
  "accept-ranges",
  "authorization",
  "cache-control",
  "connection",
  "content-length",
  "content-encoding",
  "content-type",
  "dnt",
  "if-match",
  "if-modified-since",
  "if-none-match",
  "if-range",
  "if-unmodified-since",
  "keep-alive",
  "pragma",
  "priority",
  "proxy-connection",
  "purpose",
  "range",
  "save-data",
  "te",
  "transfer-encoding",
  "upgrade",
  "upgrade-insecure-requests",
  "x-requested-with",
]);
/**
 * Header names with the same fixed-grammar property (fetch metadata and client hints: `sec-*`,
 * and `x-client-data`).
 */
function standardByName(name: string): boolean {
  return name.startsWith("sec-") || name === "x-client-data";
}

/**
 * Extracts every inspectable value of a request: the target first, then headers and
 * cookies, then the body.
 *
 * @param req the request as the connector captured it
 * @returns the inputs, at most {@link MAX_INPUTS}
 *
 * @example
 * ```ts
 * import { extract } from "./mod.ts";
 * extract({ method: "GET", path: "/a", query: "q=1", headers: [] })
 *   .map((i) => [i.source, i.name, i.value]); // [["path", "", "/a"], ["query", "q", "1"]]
 * ```
 */
export function extract(req: EngineRequest): Input[] {
  const out: Input[] = [];
  addPath(out, req.path);
  const graphqlPath = GRAPHQL_PATH.test(req.path);
  if (req.query.length > 0) {
    const before = out.length;
    addPairs(out, req.query, "query");
    if (out.length - before >= MAX_QUERY_INPUTS) {
      out.length = before + MAX_QUERY_INPUTS - 1;
      push(out, "query", "", req.query);
    }
    if (graphqlPath) addGraphqlQuery(out, req.query);
  }
  let contentType = "";
  for (const [name, value] of req.headers) {
    if (name === "content-type") contentType = value;
  }
  addHeaders(out, req.headers);
  if (req.body !== undefined && req.body.length > 0) {
    addBody(req.body, { out, contentType, graphqlPath });
  }
  return out;
}

/** A header value's bytes beyond ASCII (the server hands each byte over as one character). */
const HIGH_BYTE = /[\x80-\xff]/;
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A header value as an application that reads its bytes as UTF-8 sees it (PHP, Python, Go,
 * Ruby do; IIS then maps fullwidth `＜` to `<`, which the detectors fold too): bytes that form
 * valid UTF-8 are decoded, anything else stays one character a byte.
 */
function utf8Reading(value: string): string {
  if (!HIGH_BYTE.test(value)) return value;
  const bytes = new Uint8Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c > 0xff) return value; // already text, not bytes
    bytes[i] = c;
  }
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return value;
  }
}

function addHeaders(out: Input[], headers: EngineRequest["headers"]): void {
  for (const [name, raw] of headers) {
    const value = name === "cookie" || !STANDARD_HEADERS.has(name) ? utf8Reading(raw) : raw;
    if (name === "cookie") {
      addCookies(out, value);
    } else if (name === "host") {
      // The host only matters for header injection; inspect.ts runs the CRLF check on it.
      if (unusualInStandard(value)) push(out, "header", name, value);
    } else if (STANDARD_HEADERS.has(name) || standardByName(name)) {
      if (unusualInStandard(value)) push(out, "header", name, value);
    } else {
      push(out, "header", name, value);
      if (name === "referer") addRefererQuery(out, value);
    }
  }
}

/** The referer's query is often the previous page's attack; its parameters are judged alone. */
function addRefererQuery(out: Input[], value: string): void {
  const q = value.indexOf("?");
  if (q < 0) return;
  const hash = value.indexOf("#", q);
  const query = hash < 0 ? value.slice(q + 1) : value.slice(q + 1, hash);
  for (const pair of query.split("&")) {
    const eq = pair.indexOf("=");
    if (eq > 0 && eq < pair.length - 1) {
      push(out, "header", `referer?${safeDecodeName(pair.slice(0, eq))}`, pair.slice(eq + 1));
    }
  }
}

function addCookies(out: Input[], header: string): void {
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    const name = (eq < 0 ? part : part.slice(0, eq)).trim();
    const value = eq < 0 ? "" : part.slice(eq + 1).trim();
    // Names are attacker-chosen too; applications iterate over every cookie they get.
    if (!isPlainSegment(name) || name.indexOf(".") >= 0) push(out, "cookie_name", name, name);
    push(out, "cookie", name, value);
  }
}
