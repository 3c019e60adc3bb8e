/**
 * Property paths written as arrays: lodash's `set`/`setWith`, `object-path` and most deep-set
 * helpers take a path as an array of keys as readily as a dotted string, and JSON bodies and
 * `qs` (`path[]=__proto__&path[]=isAdmin`, `path[0]=...`) hand them arrays. Consecutive elements
 * of one array from a `__proto__` or `constructor` on are joined with dots and judged as a path
 * value (`proto.path` in prototype_pollution.ts).
 */
import type { Input } from "./types.ts";
import { push } from "./extract_push.ts";
import { percentDecode } from "./normalize.ts";

/** An array element's path: the array's path and the element's index. */
const ELEMENT = /^(.*)\[(\d+)\]$/;
/** The names that lead into the prototype, and the one a constructor leads on with. */
const PROTOTYPE_WORDS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);
/** Elements of an array path joined at most (`["__proto__","a","b"]` is three). */
const MAX_PATH_ELEMENTS = 8;

/**
 * A property path written as a JSON array (`{"path":["__proto__","isAdmin"]}`): lodash's
 * `set`/`setWith`, `object-path` and most deep-set helpers take a path as an array of keys as
 * readily as a dotted string. Consecutive string elements from a `__proto__` or `constructor`
 * on are joined with dots and judged as a path value (`proto.path`); an array of nothing but
 * the prototype's own names is a denylist (`["__proto__","constructor","prototype"]`), no path.
 */
export class ArrayPath {
  #base = "";
  #next = -1;
  #parts: string[] = [];

  /** Takes one string value; returns a joined path to judge when one ended before it. */
  take(path: string, value: string): [string, string] | undefined {
    const starts = value === "__proto__" || value === "constructor";
    if (this.#next < 0 && !starts) return undefined;
    const m = ELEMENT.exec(path);
    if (m !== null && m[1] === this.#base && Number(m[2]) === this.#next) {
      if (this.#parts.length < MAX_PATH_ELEMENTS) this.#parts.push(value);
      this.#next++;
      return undefined;
    }
    const ended = this.end();
    if (m !== null && starts) {
      this.#base = m[1]!;
      this.#next = Number(m[2]) + 1;
      this.#parts = [value];
    }
    return ended;
  }

  /** The path collected so far, when it goes past the prototype's own names; then resets. */
  end(): [string, string] | undefined {
    const parts = this.#parts;
    this.#parts = [];
    this.#next = -1;
    const path = prototypePath(parts);
    return path === undefined ? undefined : [this.#base, path];
  }
}

/**
 * The dotted path of an array's elements from the prototype's name on, when it goes past the
 * prototype's own names: an array of nothing but them is a denylist
 * (`["__proto__","constructor","prototype"]`), no path.
 */
function prototypePath(parts: readonly string[]): string | undefined {
  if (parts.length < 2 || parts.every((p) => PROTOTYPE_WORDS.has(p))) return undefined;
  return parts.join(".");
}

/** A parameter name that adds to an array: `path[]`, `path[0]` (`qs`, PHP, Rails). */
const ARRAY_NAME = /^(.+)\[\d*\]$/;

/**
 * Adds the paths that array parameters spell (`path[]=__proto__&path[]=isAdmin`): the query's
 * or a form's inputs from `from` on, consecutive values of one array name.
 *
 * @param out the inputs collected so far
 * @param from the first input of the parameters
 */
export function addArrayParams(out: Input[], from: number): void {
  const end = out.length;
  let base = "";
  let source: Input["source"] = "query";
  let parts: string[] = [];
  const flush = () => {
    const path = prototypePath(parts);
    if (path !== undefined) push(out, source, base, path);
    parts = [];
  };
  for (let i = from; i < end; i++) {
    const input = out[i]!;
    // Parameter names judged as inputs of their own sit between the values: not elements.
    if (input.source !== "query" && input.source !== "form") continue;
    const raw = input.value;
    // Most values name no prototype: one search each, and nothing is decoded.
    if (
      parts.length === 0 && raw.indexOf("proto") < 0 && raw.indexOf("constructor") < 0 &&
      raw.indexOf("%") < 0
    ) continue;
    const m = ARRAY_NAME.exec(input.name);
    const value = percentDecode(raw, true);
    if (m !== null && parts.length > 0 && m[1] === base) {
      if (parts.length < MAX_PATH_ELEMENTS) parts.push(value);
      continue;
    }
    flush();
    if (m !== null && (value === "__proto__" || value === "constructor")) {
      base = m[1]!;
      source = input.source;
      parts = [value];
    }
  }
  flush();
}
