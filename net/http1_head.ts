/**
 * What the two HTTP/1.1 head parsers share (the own server's request heads, `http1_server.ts`,
 * and the upstream client's response heads, `upstream/http1_parse.ts`): where a head ends, its
 * bytes as a string, token characters, field names and the header pairs they produce.
 */

/** Header name/value pairs, which `fetch` and `Response` take without a `Headers` copy. */
export type HeaderPairs = Array<[string, string]>;

/**
 * Where the head ending at or after `from` ends in `buf[0, end)`: the index just past the empty
 * line (CRLF CRLF, LF LF or LF CRLF: bare LF as RFC 9112 §2.2 lets a recipient accept), or -1 if
 * not yet there. A plain loop over the bytes: cheaper than `indexOf(10)` per line, and every head
 * of the data plane passes here (see docs/bench/2026-11-26-own-client-cheaper.md).
 */
export function headEnd(buf: Uint8Array, from: number, end: number): number {
  for (let i = from; i < end; i++) {
    if (buf[i] !== 10) continue;
    if (i + 1 < end && buf[i + 1] === 10) return i + 2;
    if (i + 2 < end && buf[i + 1] === 13 && buf[i + 2] === 10) return i + 3;
  }
  return -1;
}

const ascii = new TextDecoder();

/** The bytes as a string of code units 0-255 (header bytes are not UTF-8). */
export function latin1(buf: Uint8Array, start: number, end: number): string {
  let plain = true;
  for (let i = start; i < end; i++) {
    if (buf[i]! > 0x7f) {
      plain = false;
      break;
    }
  }
  if (plain) return ascii.decode(buf.subarray(start, end));
  let s = "";
  for (let i = start; i < end; i += 8192) {
    s += String.fromCharCode(...buf.subarray(i, Math.min(end, i + 8192)));
  }
  return s;
}

/** Token characters (RFC 9110 §5.6.2), by code (1 for a token character). */
export const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
  TCHAR[c.charCodeAt(0)] = 1;
}

/**
 * Field names met on nearly every request and answer, lower-case. A name read from a head is
 * one of these strings when it matches (see {@link fieldName}), so the common names cost no copy and no
 * `toLowerCase()` per request, and compare by reference later on.
 */
export const COMMON_FIELD_NAMES: readonly string[] = [
  "host",
  "user-agent",
  "accept",
  "accept-encoding",
  "accept-language",
  "accept-ranges",
  "authorization",
  "cache-control",
  "connection",
  "content-encoding",
  "content-length",
  "content-type",
  "cookie",
  "date",
  "etag",
  "expires",
  "if-modified-since",
  "if-none-match",
  "keep-alive",
  "last-modified",
  "location",
  "origin",
  "pragma",
  "referer",
  "server",
  "set-cookie",
  "transfer-encoding",
  "upgrade-insecure-requests",
  "vary",
  "x-forwarded-for",
  "x-forwarded-proto",
  "x-real-ip",
  "x-requested-with",
];
/** {@link COMMON_FIELD_NAMES} by length. */
const COMMON_NAMES: ReadonlyArray<readonly string[] | undefined> = (() => {
  const byLength: string[][] = [];
  for (const name of COMMON_FIELD_NAMES) (byLength[name.length] ??= []).push(name);
  return byLength;
})();

/**
 * The lower-case name of the field whose name is `text[start, end)`, which the caller has checked
 * to be token characters (RFC 9110 §5.6.2). The common names are compared in place: with token
 * characters only, `c | 0x20` equals a lower-case letter, a digit or `-` exactly when `c` is that
 * character or its upper case (CR, whose bit 5 also gives `-`, is no token character).
 */
export function fieldName(text: string, start: number, end: number): string {
  const candidates = COMMON_NAMES[end - start];
  if (candidates !== undefined) {
    for (const name of candidates) {
      let i = 0;
      while (i < name.length && (text.charCodeAt(start + i) | 0x20) === name.charCodeAt(i)) i++;
      if (i === name.length) return name;
    }
  }
  return text.slice(start, end).toLowerCase();
}

/** A header line without its final CR (bare-LF lines are taken as they are). */
export function stripCr(line: string): string {
  return line.charCodeAt(line.length - 1) === 13 ? line.slice(0, -1) : line;
}

/** A field value without the optional whitespace (spaces and tabs) around it. */
export function trimOws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 32 || s.charCodeAt(a) === 9)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 32 || s.charCodeAt(b - 1) === 9)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

// What scanFieldLine found (plain numbers: this runs for every header line).
/** A field line: its name and value are on the {@link FieldLine}. */
export const FIELD = 0;
/** The empty line that ends the head. */
export const EMPTY_LINE = 1;
/** No line feed after the line's start. */
export const UNENDED = 2;
/** No colon in the line, or nothing before it. */
export const NO_COLON = 3;
/** A byte that is no token character before the colon (obs-fold, whitespace before it). */
export const BAD_NAME = 4;
/** A byte the value may not hold (see {@link scanFieldLine}'s `strict`). */
export const BAD_VALUE = 5;

/** The field line {@link scanFieldLine} read: one per parser, reused for every line. */
export class FieldLine {
  /** Where the line's line feed is: the next line starts after it. */
  lf = 0;
  /** The lower-case name (see {@link fieldName}). */
  name = "";
  /** The value without the optional whitespace around it. */
  value = "";
}

/**
 * Reads the field line starting at `text[start]` into `line` and says what it was (`FIELD`,
 * `EMPTY_LINE`, ...): the one scanner of both head parsers, walking the line in place (no array
 * of lines, no regular expression, nothing allocated but the name and value). One CR before the
 * LF ends the line; any other CR is refused with the value's bytes. With `strict` (requests) the
 * value may hold no control byte but tab, nor DEL; otherwise (responses, as `Response` takes
 * them) no NUL or CR.
 */
export function scanFieldLine(
  text: string,
  start: number,
  line: FieldLine,
  strict: boolean,
): number {
  const lf = text.indexOf("\n", start);
  if (lf < 0) return UNENDED;
  line.lf = lf;
  const end = lf > start && text.charCodeAt(lf - 1) === 13 ? lf - 1 : lf;
  if (end === start) return EMPTY_LINE;
  let colon = start;
  while (colon < end) {
    const c = text.charCodeAt(colon);
    if (c > 127 || TCHAR[c] === 0) break;
    colon++;
  }
  if (colon === start || colon === end || text.charCodeAt(colon) !== 58) {
    const at = text.indexOf(":", start);
    return at <= start || at > end ? NO_COLON : BAD_NAME;
  }
  let a = colon + 1;
  let b = end;
  while (a < b && (text.charCodeAt(a) === 32 || text.charCodeAt(a) === 9)) a++;
  while (b > a && (text.charCodeAt(b - 1) === 32 || text.charCodeAt(b - 1) === 9)) b--;
  if (strict) {
    for (let i = a; i < b; i++) {
      const c = text.charCodeAt(i);
      if ((c < 32 && c !== 9) || c === 127) return BAD_VALUE;
    }
  } else {
    for (let i = a; i < b; i++) {
      const c = text.charCodeAt(i);
      if (c === 0 || c === 13) return BAD_VALUE;
    }
  }
  line.name = fieldName(text, start, colon);
  line.value = text.slice(a, b);
  return FIELD;
}
