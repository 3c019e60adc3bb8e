/**
 * A lazily decoded view of an {@link EngineRequest} for the rule-based controls (ACL rules and
 * custom regex rules): each part is decoded at most once, and only when a rule asks for it, so
 * a request that no rule inspects pays nothing. The path is the one normalised path of
 * `path_normalize.ts`, read as the site's upstream kind reads it; the methods are the request's
 * own and those its overrides name (`X-HTTP-Method-Override`, `_method`, ...).
 */
import {
  DEFAULT_UPSTREAM_KIND,
  normalizePath,
  type NormalPath,
  type UpstreamKind,
} from "./path_normalize.ts";
import { percentDecode } from "./normalize.ts";
import type { EngineRequest } from "./types.ts";
import { decodeBodyText } from "./charset.ts";
const FORM = /^application\/x-www-form-urlencoded\b/i;
const MULTIPART = /^multipart\/form-data\b/i;
const JSON_TYPE = /^application\/([a-z0-9.+-]*\+)?json\b/i;
/**
 * Headers that frameworks read as the method instead of the request line's (Express's
 * method-override, Rails, Symfony and ASP.NET Core: `X-HTTP-Method-Override`; OData and WCF:
 * `X-HTTP-Method`; others: `X-Method-Override`).
 */
const OVERRIDE_HEADERS: ReadonlySet<string> = new Set([
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
]);
/** The form field Laravel, Symfony, Rails and others read as the method. */
const METHOD_FIELD = "_method";
const METHOD_FIELD_BYTES = new TextEncoder().encode(METHOD_FIELD);
/** A multipart part named `_method` and its value (the line after the part's headers). */
const MULTIPART_METHOD = /name="?_method"?[^\r\n]*\r?\n(?:[^\r\n]+\r?\n)*\r?\n([^\r\n]*)/i;

/** Whether `bytes` contain `needle`. */
function bytesInclude(bytes: Uint8Array, needle: Uint8Array): boolean {
  const first = needle[0]!;
  for (let i = bytes.indexOf(first); i >= 0; i = bytes.indexOf(first, i + 1)) {
    let k = 1;
    while (k < needle.length && bytes[i + k] === needle[k]) k++;
    if (k === needle.length) return true;
  }
  return false;
}

/** Adds an override's value, trimmed and in capitals, unless empty or already there. */
function addMethod(out: string[], value: unknown): void {
  if (typeof value !== "string") return;
  const m = value.trim().toUpperCase();
  if (m !== "" && m.length <= 32 && !out.includes(m)) out.push(m);
}

/** One `application/x-www-form-urlencoded` component; undefined when its escapes are not UTF-8. */
function formDecode(text: string): string | undefined {
  const spaced = text.includes("+") ? text.replaceAll("+", " ") : text;
  if (!spaced.includes("%")) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return undefined;
  }
}

/**
 * Name/value pairs exactly as `URLSearchParams` parses them, without its per-call cost for the
 * usual text (no escapes, or escapes of valid UTF-8); anything else goes to `URLSearchParams`,
 * whose lenient decoding stays the reference.
 */
export function parsePairs(text: string): Array<readonly [string, string]> {
  const out: Array<readonly [string, string]> = [];
  if (text.length === 0) return out;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf("&", start);
    if (end < 0) end = text.length;
    if (end > start) {
      // Searched within the pair: a search of the whole rest would make a run of value-less
      // pairs (`a&a&a...`) quadratic.
      const pair = text.slice(start, end);
      const eq = pair.indexOf("=");
      const name = formDecode(eq < 0 ? pair : pair.slice(0, eq));
      const value = eq < 0 ? "" : formDecode(pair.slice(eq + 1));
      if (name === undefined || value === undefined) {
        return Array.from(new URLSearchParams(text), ([k, v]) => [k, v] as const);
      }
      out.push([name, value]);
    }
    start = end + 1;
  }
  return out;
}

export class RequestView {
  readonly req: EngineRequest;
  /** Site host name as matched (lower case, no port). */
  readonly host: string;
  /** How the site's upstream reads paths. */
  readonly upstreamKind: UpstreamKind;
  #path?: NormalPath;
  #decodedQuery?: string;
  #methods?: readonly string[];
  /** Whether {@link #methods} was gathered with the body known. */
  #methodsWithBody = false;
  #params?: ReadonlyArray<readonly [string, string]>;
  #query?: ReadonlyArray<readonly [string, string]>;
  #cookies?: string;
  #body?: string;

  constructor(req: EngineRequest, host: string, upstreamKind = DEFAULT_UPSTREAM_KIND) {
    this.req = req;
    this.host = host;
    this.upstreamKind = upstreamKind;
  }

  /** The path as the site's upstream reads it (computed once; see `path_normalize.ts`). */
  get normalPath(): NormalPath {
    return this.#path ??= normalizePath(this.req.path, this.upstreamKind);
  }

  /** The normalised path, in the case it was sent (invalid escapes stay as written). */
  get path(): string {
    return this.normalPath.text;
  }

  /**
   * The request's method and every method an override names, in capitals, the request line's
   * first: the override headers, a `_method` query parameter and, once the body is known, a
   * `_method` field of a form, multipart or JSON body. Frameworks honour these on POST only;
   * they are read on every method, so no configuration of the upstream escapes a method rule.
   */
  get methods(): readonly string[] {
    const withBody = this.req.body !== undefined;
    if (this.#methods !== undefined && this.#methodsWithBody === withBody) return this.#methods;
    const out = [this.req.method.toUpperCase()];
    for (const [k, v] of this.req.headers) if (OVERRIDE_HEADERS.has(k)) addMethod(out, v);
    if (this.req.query.includes(METHOD_FIELD)) {
      for (const [k, v] of this.query) if (k === METHOD_FIELD) addMethod(out, v);
    }
    if (withBody) this.#bodyMethods(out);
    this.#methodsWithBody = withBody;
    return this.#methods = out;
  }

  /** Adds the `_method` fields of a form, multipart or JSON body. */
  #bodyMethods(out: string[]): void {
    const body = this.req.body;
    if (body === undefined || !bytesInclude(body, METHOD_FIELD_BYTES)) return;
    const type = this.header("content-type") ?? "";
    if (FORM.test(type)) {
      for (const [k, v] of parsePairs(this.body)) if (k === METHOD_FIELD) addMethod(out, v);
    } else if (MULTIPART.test(type)) {
      addMethod(out, MULTIPART_METHOD.exec(this.body)?.[1]);
    } else if (JSON_TYPE.test(type)) {
      try {
        const doc: unknown = JSON.parse(this.body);
        if (doc !== null && typeof doc === "object" && !Array.isArray(doc)) {
          addMethod(out, (doc as Record<string, unknown>)[METHOD_FIELD]);
        }
      } catch {
        // Not JSON: no field.
      }
    }
  }

  /** Raw query string without `?`. */
  get rawQuery(): string {
    return this.req.query;
  }

  /** The query string percent-decoded once, `+` as a space (what a framework reads). */
  get decodedQuery(): string {
    return this.#decodedQuery ??= percentDecode(this.req.query, true);
  }

  /** Query parameters, decoded. */
  get query(): ReadonlyArray<readonly [string, string]> {
    return this.#query ??= parsePairs(this.req.query);
  }

  /** Query parameters followed by form-body parameters, decoded. */
  get params(): ReadonlyArray<readonly [string, string]> {
    if (this.#params) return this.#params;
    const form = FORM.test(this.header("content-type") ?? "") ? parsePairs(this.body) : [];
    return this.#params = form.length ? [...this.query, ...form] : this.query;
  }

  /** First value of a header (name in lower case). */
  header(name: string): string | undefined {
    for (const [k, v] of this.req.headers) if (k === name) return v;
    return undefined;
  }

  /** Every `Cookie` header joined with `; `. */
  get cookies(): string {
    if (this.#cookies !== undefined) return this.#cookies;
    const parts: string[] = [];
    for (const [k, v] of this.req.headers) if (k === "cookie") parts.push(v);
    return this.#cookies = parts.join("; ");
  }

  /** The inspected body prefix as text, in its declared charset or UTF-8 (empty without one). */
  get body(): string {
    return this.#body ??= this.req.body
      ? decodeBodyText(this.req.body, this.header("content-type") ?? "")
      : "";
  }
}
