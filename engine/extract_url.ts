/**
 * Extraction from the request target: the path, its segments and matrix parameters, and
 * `name=value` lists (query strings and form bodies).
 */

import type { Input } from "./types.ts";
import { addArrayParams } from "./array_path.ts";
import { MAX_INPUTS, push } from "./extract_push.ts";
import { isPlainSegment } from "./char_classes.ts";

/** A segment that could be base64 (URL-safe or standard without `/`) long enough to hide code. */
const BASE64_SEGMENT = /^[A-Za-z0-9+_-]{8,}={0,2}$/;

/**
 * The whole path, then every segment that is not a plain word (`path[2]`), then the
 * matrix parameters of a segment (`path[2];jsessionid`). A payload placed as a segment
 * (`/foo/24'union select 1/bar`) is judged alone, so the text around it cannot dilute it;
 * encoded slashes (`..%2f..%2f`) stay inside their segment and are decoded with it.
 *
 * @param out the inputs collected so far
 * @param path the raw path, still percent-encoded
 */
export function addPath(out: Input[], path: string): void {
  if (path === "/" || path.length === 0) return;
  push(out, "path", "", path);
  const segments = path.split("/");
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.length === 0) continue;
    if (isPlainSegment(segment) && (segment.length < 8 || !BASE64_SEGMENT.test(segment))) {
      continue;
    }
    push(out, "path", `[${i}]`, segment);
    const semi = segment.indexOf(";");
    if (semi < 0) continue;
    for (const param of segment.slice(semi + 1).split(";")) {
      const eq = param.indexOf("=");
      if (eq > 0) push(out, "path", `[${i}];${param.slice(0, eq)}`, param.slice(eq + 1));
    }
  }
}

/** A base64 token's digits: both cases and a digit, as encoded bytes have (`rO0ABXNy`). */
const BASE64_DIGITS = /^[A-Za-z0-9+/]{8,}$/;
const UPPER = /[A-Z]/;
const LOWER = /[a-z]/;
const DIGIT = /\d/;

/** Whether a name is a base64 token rather than a word (`description`, `page_size`). */
function isBase64Token(name: string): boolean {
  return BASE64_DIGITS.test(name) && UPPER.test(name) && LOWER.test(name) && DIGIT.test(name);
}

/**
 * Splits `name=value&...`. A piece without `=` that follows a value is glued back onto that
 * value (`q=<img src=j&#X41vascript:...>`, `cmd=1 && ls`): no browser sends such a piece,
 * but a payload's own `&` (an entity, a shell operator) splits it there, and lenient
 * parsers that re-join the raw string see the whole payload. Plain word pieces (`&debug`)
 * stay flags. Names that are not plain words are judged too (`?<script>=1`).
 *
 * @param out the inputs collected so far
 * @param text the raw list, still percent-encoded
 * @param source `query` or `form`
 * @param marks when given, receives for each pair's input (not the joined readings after them)
 *   the offset in `text` where its pair starts
 */
export function addPairs(
  out: Input[],
  text: string,
  source: "query" | "form",
  marks?: number[],
): void {
  const pieces = text.split("&");
  const nameSource = source === "query" ? "query_name" : "form_name";
  const from = out.length;
  let next = 0;
  for (let i = 0; i < pieces.length; i++) {
    // Once the request has all the inputs it can, the pieces left add nothing (no input, no
    // mark): a long form's thousands of names are not decoded for nothing.
    if (out.length >= MAX_INPUTS) break;
    const pair = pieces[i]!;
    const at = next;
    next += pair.length + 1;
    if (pair.length === 0) continue;
    const eq = pair.indexOf("=");
    const name = eq < 0 ? pair : pair.slice(0, eq);
    let value = eq < 0 ? "" : pair.slice(eq + 1);
    // Plain names are judged only when they may climb into the prototype (`__proto__.x`) or
    // name a class (`java.lang.Runtime=1`); a piece without `=` is a flag, or a value sent
    // without a name (a raw body posted as a form): judged as what it says (`INFORMATION_SCHEMA`).
    if (
      (value === "" || value === "=") && eq >= 0 && pair.length % 4 === 0 && isBase64Token(name)
    ) {
      // `rO0ABX...==`: a base64 token sent without a name, its padding read as `=` and a value.
      push(out, nameSource, pair, pair);
    } else if (
      eq < 0 || !isPlainSegment(name) || name.indexOf("proto") >= 0 || name.indexOf(".") >= 0
    ) {
      push(out, nameSource, name, name);
    }
    if (eq >= 0) {
      while (i + 1 < pieces.length && gluesOn(pieces[i + 1]!)) {
        value += `&${pieces[++i]!}`;
        next += pieces[i]!.length + 1;
        if (!isPlainSegment(pieces[i]!)) push(out, nameSource, pieces[i]!, pieces[i]!);
      }
    }
    push(out, source, safeDecodeName(name), value);
    if (marks !== undefined) {
      while (marks.length < out.length - from) marks.push(at);
    }
  }
  addArrayParams(out, from);
  addJoinedRepeats(out, from, source);
}

/** Values one joined repeat gathers at most (ASP.NET joins them all; the rest is padding). */
const MAX_JOINED_VALUES = 64;

/**
 * ASP.NET reads a repeated parameter as one value, its values joined by `,`
 * (`Request.QueryString["q"]`, `Request.Form["q"]`): a comment opened in one value and closed in
 * the next (`q=1' union/*&q=*` + `/select ...`) reaches the application as one statement whose
 * comment holds only the comma. Each name given more than once is judged once more that way.
 *
 * @param out the inputs collected so far
 * @param from the first input of the parameters
 * @param source `query` or `form`
 */
function addJoinedRepeats(out: Input[], from: number, source: "query" | "form"): void {
  const end = out.length;
  if (end - from <= FEW_PARAMS && !anyRepeat(out, from, end, source)) return;
  // One pass: each name's first values (up to the cap), and the names given more than once in
  // the order their second value came.
  let values: Map<string, string[]> | undefined;
  const repeated: string[] = [];
  for (let i = from; i < end; i++) {
    const input = out[i]!;
    if (input.source !== source) continue;
    values ??= new Map();
    const list = values.get(input.name);
    if (list === undefined) values.set(input.name, [input.value]);
    else {
      if (list.length === 1) repeated.push(input.name);
      if (list.length < MAX_JOINED_VALUES) list.push(input.value);
    }
  }
  for (const name of repeated) {
    if (!push(out, source, name, values!.get(name)!.join(","))) return;
  }
}

/**
 * Up to this many parameters a repeat is looked for pairwise, allocating nothing: nearly every
 * request has a few parameters and none twice. More take the sets (pairwise is quadratic).
 */
const FEW_PARAMS = 16;

/** Whether a name of `source` occurs twice in `out[from..end)` (pairwise; for few inputs). */
function anyRepeat(out: readonly Input[], from: number, end: number, source: string): boolean {
  for (let i = from + 1; i < end; i++) {
    const a = out[i]!;
    if (a.source !== source) continue;
    for (let j = from; j < i; j++) {
      const b = out[j]!;
      if (b.source === source && b.name === a.name) return true;
    }
  }
  return false;
}

/** A piece that can only be the rest of the previous value: no `=`, and not a plain flag. */
function gluesOn(piece: string): boolean {
  return piece.indexOf("=") < 0 && (piece.length === 0 || !isPlainSegment(piece));
}

/** Parameter names for locations: decoded when possible, raw when the escapes are broken. */
export function safeDecodeName(name: string): string {
  if (!name.includes("%") && !name.includes("+")) return name;
  try {
    return decodeURIComponent(name.replaceAll("+", " "));
  } catch {
    return name;
  }
}
