/**
 * A lazily decoded view of an {@link EngineRequest} for the rule-based controls (ACL rules and
 * custom regex rules): each part is decoded at most once, and only when a rule asks for it, so
 * a request that no rule inspects pays nothing.
 */
import type { EngineRequest } from "./types.ts";
import { decodeBodyText } from "./charset.ts";
const FORM = /^application\/x-www-form-urlencoded\b/i;

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
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
  #path?: string;
  #params?: ReadonlyArray<readonly [string, string]>;
  #query?: ReadonlyArray<readonly [string, string]>;
  #cookies?: string;
  #body?: string;

  constructor(req: EngineRequest, host: string) {
    this.req = req;
    this.host = host;
  }

  /** The path, percent-decoded (invalid escapes stay as written). */
  get path(): string {
    return this.#path ??= safeDecode(this.req.path);
  }

  /** Raw query string without `?`. */
  get rawQuery(): string {
    return this.req.query;
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
