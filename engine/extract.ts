/**
 * Splits an {@link EngineRequest} into the attacker-controlled values the detectors judge.
 *
 * Values stay raw (still percent-encoded where the wire format encodes them); decoding is
 * the normaliser's job, so detectors that judge the encoding itself still can. Nothing here
 * throws: malformed escapes, invalid JSON, broken multipart and binary bodies degrade to
 * fewer or coarser inputs.
 */

import type { EngineRequest, Input, InputSource } from "./types.ts";
import { parseMultipart } from "./multipart.ts";

/** Inputs per request; beyond this the request is reported as truncated by the inspector. */
export const MAX_INPUTS = 1024;
/** JSON nesting walked; deeper structures are only seen through their ancestors' keys. */
const MAX_JSON_DEPTH = 32;

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
/** Header name prefixes with the same fixed-grammar property (fetch metadata, client hints). */
const STANDARD_PREFIX = /^(?:sec-|x-client-data$)/;
/** Characters the standard headers' grammars never contain. */
// deno-lint-ignore no-control-regex -- control characters never belong in these headers
const UNUSUAL_IN_STANDARD = /[<>'`{}$()%\\\x00-\x1f]/;
const BOUNDARY = /boundary=(?:"([^"]+)"|([^\s;]+))/i;

const UTF8 = new TextDecoder("utf-8", { fatal: false });

/**
 * Extracts every inspectable value of a request, most-attacked places first (so the work
 * budget is spent where attacks usually are).
 *
 * @param req the request as the connector captured it
 * @returns the inputs, at most {@link MAX_INPUTS}
 */
export function extract(req: EngineRequest): Input[] {
  const out: Input[] = [];
  addPath(out, req.path);
  if (req.query.length > 0) addPairs(out, req.query, "&", "query");
  let contentType = "";
  for (const [name, value] of req.headers) {
    if (name === "content-type") contentType = value;
  }
  if (req.body !== undefined && req.body.length > 0) addBody(out, req.body, contentType);
  addHeaders(out, req.headers);
  if (out.length > MAX_INPUTS) out.length = MAX_INPUTS;
  return out;
}

function push(out: Input[], source: InputSource, name: string, value: string): void {
  if (value.length > 0 && out.length <= MAX_INPUTS) out.push({ source, name, value });
}

/** Characters a path segment can hold without being worth a separate look. */
const PLAIN_SEGMENT = /^[A-Za-z0-9_.~@,-]*$/;

function addPath(out: Input[], path: string): void {
  if (path === "/" || path.length === 0) return;
  push(out, "path", "", path);
  const segments = path.split("/");
  // A segment alone shows breakouts (`1' or '1'='1`) that the whole path hides behind text.
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.length > 0 && !PLAIN_SEGMENT.test(segment)) push(out, "path", String(i), segment);
  }
}

function addPairs(out: Input[], text: string, separator: string, source: "query" | "form"): void {
  for (const pair of text.split(separator)) {
    if (pair.length === 0) continue;
    const eq = pair.indexOf("=");
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? "" : pair.slice(eq + 1);
    // Names are attacker-chosen too (`?<script>=1`); a value-less pair is all name.
    if (source === "query" && !PLAIN_SEGMENT.test(name)) push(out, "query_name", name, name);
    push(out, source, safeDecodeName(name), value);
  }
}

/** Parameter names for locations: decoded when possible, raw when the escapes are broken. */
function safeDecodeName(name: string): string {
  if (!name.includes("%") && !name.includes("+")) return name;
  try {
    return decodeURIComponent(name.replaceAll("+", " "));
  } catch {
    return name;
  }
}

function addHeaders(out: Input[], headers: EngineRequest["headers"]): void {
  for (const [name, value] of headers) {
    if (name === "cookie") {
      addCookies(out, value);
    } else if (name === "host") {
      // The host only matters for header injection; inspect.ts runs the CRLF check on it.
      if (UNUSUAL_IN_STANDARD.test(value)) push(out, "header", name, value);
    } else if (STANDARD_HEADERS.has(name) || STANDARD_PREFIX.test(name)) {
      if (UNUSUAL_IN_STANDARD.test(value)) push(out, "header", name, value);
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
    push(out, "cookie", name, value);
  }
}

function addBody(out: Input[], body: Uint8Array, contentType: string): void {
  const type = contentType.toLowerCase();
  if (type.startsWith("multipart/")) {
    const m = BOUNDARY.exec(contentType);
    const boundary = m?.[1] ?? m?.[2];
    if (boundary !== undefined) {
      for (const part of parseMultipart(latin1(body), boundary)) {
        if (part.filename !== undefined) push(out, "filename", part.name, part.filename);
        if (isText(part.value)) push(out, "multipart", part.name, utf8FromLatin1(part.value));
      }
      return;
    }
  }
  const text = UTF8.decode(body);
  if (type.includes("x-www-form-urlencoded")) {
    addPairs(out, text, "&", "form");
  } else if (type.includes("json")) {
    addJsonOrText(out, text);
  } else if (type.includes("xml")) {
    push(out, "xml", "", text);
  } else if (isText(text)) {
    addSniffed(out, text);
  }
}

/** Bodies without a useful content type are read by their shape, as lenient frameworks do. */
function addSniffed(out: Input[], text: string): void {
  const first = text.trimStart()[0];
  if (first === "{" || first === "[") addJsonOrText(out, text);
  else if (first === "<") push(out, "xml", "", text);
  else push(out, "body", "", text);
}

function addJsonOrText(out: Input[], text: string): void {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    // Truncated or malformed JSON is still inspected as text.
    push(out, "body", "", text);
    return;
  }
  walkJson(out, doc, "", 0);
}

/** JSON keys are only worth a look when they are not plain identifiers (`$where`, `<x>`). */
const PLAIN_KEY = /^[A-Za-z0-9_-]*$/;

function walkJson(out: Input[], node: unknown, path: string, depth: number): void {
  if (out.length > MAX_INPUTS || depth > MAX_JSON_DEPTH) return;
  if (typeof node === "string") {
    push(out, "json", path, node);
  } else if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) walkJson(out, node[i], `${path}[${i}]`, depth + 1);
  } else if (node !== null && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      const child = path.length === 0 ? key : `${path}.${key}`;
      if (!PLAIN_KEY.test(key)) push(out, "json", child, key);
      walkJson(out, value, child, depth + 1);
    }
  }
}

function latin1(bytes: Uint8Array): string {
  let out = "";
  const CHUNK = 8192;
  for (let i = 0; i < bytes.length; i += CHUNK) {
    out += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return out;
}

function utf8FromLatin1(s: string): string {
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return UTF8.decode(bytes);
}

/** Binary content (images, archives) is not inspectable text; a few control bytes are. */
function isText(s: string): boolean {
  const n = Math.min(s.length, 512);
  let control = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if ((c < 0x20 && c !== 9 && c !== 10 && c !== 13) || c === 0xfffd) control++;
  }
  return control * 20 <= n;
}

const MAX_NESTED_LEAVES = 64;

/**
 * String values of a JSON document nested inside another value (a query parameter holding
 * JSON, base64-wrapped JSON), so each is judged alone rather than as JSON punctuation.
 *
 * @returns the strings, or undefined when the text is not a JSON object or array
 */
export function nestedJsonStrings(text: string): string[] | undefined {
  const first = text.charCodeAt(0);
  const last = text.charCodeAt(text.length - 1);
  if (!((first === 123 && last === 125) || (first === 91 && last === 93))) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  const out: string[] = [];
  const walk = (node: unknown, depth: number): void => {
    if (out.length >= MAX_NESTED_LEAVES || depth > MAX_JSON_DEPTH) return;
    if (typeof node === "string") out.push(node);
    else if (Array.isArray(node)) { for (const item of node) walk(item, depth + 1); }
    else if (node !== null && typeof node === "object") {
      for (const value of Object.values(node)) walk(value, depth + 1);
    }
  };
  walk(doc, 0);
  return out;
}
