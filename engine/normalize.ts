/**
 * Decoding of attacker-controlled values before detection.
 *
 * Attackers hide payloads behind layers of encoding that the application (or the browser)
 * undoes later: percent escapes (sometimes twice), IIS `%uXXXX`, overlong UTF-8, HTML
 * entities, JavaScript escapes. Detectors must see what the application will see, so each
 * value is peeled layer by layer until it stops changing, with hard bounds on the number of
 * layers and on the length analysed, so a hostile request cannot make inspection slow.
 */

import { decodeEntities } from "./entities.ts";
import { MAX_TEXT } from "./limits.ts";

/**
 * Layers of decoding applied at most. Three cover double encoding plus one entity layer; no
 * application decodes more, but a scanner's evasion does not know that (`%25252527`), and a value
 * stops costing a layer once it stops changing, so real traffic never pays for the other three.
 */
export const MAX_DECODE_LAYERS = 6;
/** Characters of one value that are analysed; the rest is ignored and reported as truncated. */
export const MAX_VALUE_CHARS = MAX_TEXT;

/** Characters that can start an encoded sequence; a value without them is returned as is. */
const ENCODED_HINT = /[%&\\+]/;
const NUL = /\0/g;
/** Base64 text long enough to hide a payload, optionally padded. */
const BASE64 = /^[A-Za-z0-9+/_-]{8,}={0,2}$/;
const PADDING = /=+$/;
/** Decoded base64 inside other text is only interesting when it reads like markup or code. */
const CODE_LIKE = /[<>'"();${}`|=/\r\n\\]/;
/** A value that is base64 as a whole is also worth a look when it decodes to words. */
const WORDS_OR_CODE = /[<>'"();${}`|=/\s\\]/;

/** How `+` is read: as a space in query strings and form bodies, literally elsewhere. */
export type PlusMode = "space" | "literal";

/** Result of {@link normalize}. */
export interface Normalized {
  readonly text: string;
  /** True when the value was longer than {@link MAX_VALUE_CHARS}. */
  readonly truncated: boolean;
}

/**
 * Fully decodes one value: percent escapes (with `%uXXXX` and overlong UTF-8), HTML
 * entities and JavaScript escapes, repeated until stable or {@link MAX_DECODE_LAYERS};
 * NUL bytes removed.
 *
 * @param value raw value as received
 * @param plus whether `+` means a space in the first percent-decoding layer
 * @returns the decoded text and whether the input was cut to the analysis limit
 *
 * @example
 * ```ts
 * import { normalize } from "./mod.ts";
 * normalize("%253Cscript%253E").text; // "<script>" (two layers of percent escapes)
 * normalize("a+b", "space").text; // "a b"
 * ```
 */
export function normalize(value: string, plus: PlusMode = "literal"): Normalized {
  const truncated = value.length > MAX_VALUE_CHARS;
  let text = truncated ? value.slice(0, MAX_VALUE_CHARS) : value;
  if (plus === "space" && onlyPlusEncoded(text)) {
    // A form-encoded value whose only escape is `+` (`correct+horse+battery`): the layers below
    // would turn each `+` into a space and then find nothing else to decode, one concatenation
    // at a time. One flat copy instead.
    text = text.replaceAll("+", " ");
  } else if (ENCODED_HINT.test(text)) {
    for (let layer = 0; layer < MAX_DECODE_LAYERS; layer++) {
      let next = percentDecode(text, layer === 0 && plus === "space");
      next = decodeEntities(next);
      next = decodeJsEscapes(next);
      if (next.includes("+A")) next = decodeUtf7(next);
      if (next === text) break;
      text = next;
    }
  }
  if (text.includes("\0")) text = text.replace(NUL, "");
  return { text, truncated };
}

/**
 * Whether `text` holds a `+` and none of the other characters that start an encoded sequence
 * (`%`, `&`, a backslash). With `+` read as a space, such a value decodes to itself with every `+` a
 * space: percent-decoding has no escape to decode, and the spaces it leaves start neither an
 * entity, a JavaScript escape nor UTF-7 (`+A`), so the next layer changes nothing.
 */
function onlyPlusEncoded(text: string): boolean {
  return text.indexOf("+") >= 0 && text.indexOf("%") < 0 && text.indexOf("&") < 0 &&
    text.indexOf("\\") < 0;
}

/**
 * Decodes only what an HTML parser would see: percent escapes and character references,
 * without JavaScript escapes. CSS escapes such as `\0075` read as octal under
 * {@link normalize}, so markup judged for its CSS needs this reading too.
 *
 * @param value raw value as received
 * @param plus whether `+` means a space in the first percent-decoding layer
 * @returns the decoded text, cut to {@link MAX_VALUE_CHARS}
 */
export function decodeMarkup(value: string, plus: PlusMode = "literal"): string {
  let text = value.length > MAX_VALUE_CHARS ? value.slice(0, MAX_VALUE_CHARS) : value;
  for (let layer = 0; layer < MAX_DECODE_LAYERS; layer++) {
    const next = decodeEntities(percentDecode(text, layer === 0 && plus === "space"));
    if (next === text) break;
    text = next;
  }
  return text.includes("\0") ? text.replace(NUL, "") : text;
}

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 0x20;
  if (lower >= 97 && lower <= 102) return lower - 87;
  return -1;
}

/** The value of `digits` hex digits at `at`, or -1 when they are not all hex. */
export function hexAt(s: string, at: number, digits: number): number {
  if (at + digits > s.length) return -1;
  let v = 0;
  for (let i = 0; i < digits; i++) {
    const h = hexValue(s.charCodeAt(at + i));
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/**
 * Decodes `%XX` (as UTF-8, tolerating overlong forms the way old servers did) and
 * `%uXXXX`. Malformed escapes stay literally, as most servers leave them.
 */
export function percentDecode(s: string, plusIsSpace = false): string {
  if (!s.includes("%") && !(plusIsSpace && s.includes("+"))) return s;
  const fast = s.length >= MIN_ASCII_DECODED ? asciiEscapesDecoded(s, plusIsSpace) : undefined;
  if (fast !== undefined) return fast;
  // Literal runs are copied whole (`last` is where the pending one starts); escaped bytes
  // gather until a literal or another kind of escape, then decode together as UTF-8.
  let out = "";
  let last = 0;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 37 /* % */) {
      const byte = hexAt(s, i + 1, 2);
      if (byte >= 0) {
        if (bytes.length === 0) out += s.slice(last, i);
        bytes.push(byte);
        i += 2;
        last = i + 1;
        continue;
      }
      const unit = (s.charCodeAt(i + 1) | 0x20) === 117 /* u */ ? hexAt(s, i + 2, 4) : -1;
      if (unit >= 0) {
        if (bytes.length > 0) out += flushBytes(bytes);
        else out += s.slice(last, i);
        out += String.fromCharCode(unit);
        i += 5;
        last = i + 1;
        continue;
      }
    } else if (c === 43 /* + */ && plusIsSpace) {
      if (bytes.length > 0) out += flushBytes(bytes);
      else out += s.slice(last, i);
      out += " ";
      last = i + 1;
      continue;
    }
    if (bytes.length > 0) {
      out += flushBytes(bytes);
      last = i;
    }
  }
  return bytes.length > 0 ? out + flushBytes(bytes) : out + s.slice(last);
}

/**
 * Texts shorter than this are decoded piece by piece: a TextDecoder call costs about as much
 * as joining a hundred characters.
 */
const MIN_ASCII_DECODED = 128;
/** The bytes {@link asciiEscapesDecoded} decodes into. */
const ASCII = new Uint8Array(MAX_TEXT);
const ASCII_DECODER = new TextDecoder();

/**
 * {@link percentDecode} of an ASCII text whose every `%` starts an escape of an ASCII byte
 * (`%5B`, `%40`, `%2B`), as form fields are written: each escape, and each `+` read as a space,
 * is one character, which is what the general decoder makes of them (a run of bytes below 0x80
 * decodes byte by byte), written into one buffer instead of joined piece by piece. Undefined for
 * any other text (another escape, a lone `%`, a character or byte above ASCII, a text too long).
 */
function asciiEscapesDecoded(s: string, plusIsSpace: boolean): string | undefined {
  const n = s.length;
  if (n > ASCII.length) return undefined;
  const bytes = ASCII;
  let k = 0;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c === 37 /* % */) {
      c = hexAt(s, i + 1, 2);
      if (c < 0) return undefined;
      i += 2;
    } else if (c === 43 /* + */ && plusIsSpace) c = 32;
    if (c >= 0x80) return undefined;
    bytes[k++] = c;
  }
  // ASCII bytes read the same in UTF-8.
  return ASCII_DECODER.decode(bytes.subarray(0, k));
}

/** Decodes the gathered bytes and empties the list. */
function flushBytes(bytes: number[]): string {
  const text = utf8Lenient(bytes);
  bytes.length = 0;
  return text;
}

/**
 * UTF-8 decoding that maps overlong sequences (`C0 AE` = `.`) to their code point instead
 * of rejecting them, because vulnerable servers did exactly that, and keeps other invalid
 * bytes as Latin-1 characters so nothing disappears.
 */
function utf8Lenient(bytes: readonly number[]): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) {
    const b0 = bytes[i]!;
    if (b0 < 0x80) {
      out += String.fromCharCode(b0);
      continue;
    }
    const need = b0 >= 0xf0 && b0 < 0xf8 ? 3 : b0 >= 0xe0 ? 2 : b0 >= 0xc0 ? 1 : 0;
    if (need === 0 || i + need >= bytes.length) {
      out += String.fromCharCode(b0);
      continue;
    }
    let cp = b0 & (need === 1 ? 0x1f : need === 2 ? 0x0f : 0x07);
    let ok = true;
    for (let k = 1; k <= need; k++) {
      const b = bytes[i + k]!;
      if ((b & 0xc0) !== 0x80) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (b & 0x3f);
    }
    if (!ok || cp > 0x10ffff) {
      out += String.fromCharCode(b0);
      continue;
    }
    out += String.fromCodePoint(cp);
    i += need;
  }
  return out;
}

/** Decodes `\uXXXX`, `\u{X..}`, `\xXX` and octal `\NNN` escapes as JavaScript and PHP do. */
export function decodeJsEscapes(s: string): string {
  let i = s.indexOf("\\");
  if (i < 0) return s;
  let out = "";
  let last = 0;
  for (; i >= 0 && i + 1 < s.length; i = s.indexOf("\\", i + 1)) {
    const escape = jsEscapeAt(s, i);
    if (escape === undefined) continue;
    out += s.slice(last, i) + escape.text;
    last = escape.end;
    i = escape.end - 1;
  }
  return last === 0 ? s : out + s.slice(last);
}

/** The escape starting with the backslash at `i`, or undefined when it is not one. */
function jsEscapeAt(s: string, i: number): { text: string; end: number } | undefined {
  const kind = s[i + 1]!;
  if (kind === "u" || kind === "U") {
    if (s[i + 2] === "{") {
      const end = s.indexOf("}", i + 3);
      const cp = end > i + 3 && end - i <= 10 ? hexAt(s, i + 3, end - i - 3) : -1;
      if (cp >= 0 && cp <= 0x10ffff) return { text: String.fromCodePoint(cp), end: end + 1 };
    }
    const unit = hexAt(s, i + 2, 4);
    if (unit >= 0) return { text: String.fromCharCode(unit), end: i + 6 };
  } else if (kind === "x" || kind === "X") {
    const byte = hexAt(s, i + 2, 2);
    if (byte >= 0) return { text: String.fromCharCode(byte), end: i + 4 };
  } else if (kind >= "0" && kind <= "7") {
    let v = 0;
    let n = 0;
    while (n < 3 && i + 1 + n < s.length) {
      const d = s.charCodeAt(i + 1 + n) - 48;
      if (d < 0 || d > 7) break;
      v = v * 8 + d;
      n++;
    }
    if (n >= 2 || v === 0) return { text: String.fromCharCode(v), end: i + 1 + n };
  }
  return undefined;
}

/**
 * Decodes a value that is entirely base64 when the result is printable text that reads like
 * markup, code or a command line; otherwise undefined (most base64 in requests is binary or
 * opaque tokens).
 *
 * @param value the candidate
 * @param embedded true for a run found inside other text, which must read like code
 */
export function decodeBase64Code(value: string, embedded = false): string | undefined {
  if (
    value.length < 8 || value.length > MAX_VALUE_CHARS || !BASE64.test(value) ||
    !mayEncodeAscii(value)
  ) {
    return undefined;
  }
  let text: string;
  try {
    text = atob(value.replaceAll("-", "+").replaceAll("_", "/").replace(PADDING, ""));
  } catch {
    return undefined;
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // White space includes \v and \f, which HTML and shells read as separators (`<svg\fonload=`).
    if ((c < 0x20 && (c < 9 || c > 13)) || c > 0x7e) return undefined;
  }
  return (embedded ? CODE_LIKE : WORDS_OR_CODE).test(text) ? text : undefined;
}

/** Index of a base64 digit (standard or URL-safe alphabet), -1 for padding or anything else. */
function base64Index(c: number): number {
  if (c >= 65 && c <= 90) return c - 65;
  if (c >= 97 && c <= 122) return c - 71;
  if (c >= 48 && c <= 57) return c + 4;
  if (c === 43 || c === 45) return 62;
  if (c === 47 || c === 95) return 63;
  return -1;
}

/**
 * Whether base64 text can decode to 7-bit bytes, read from the digits alone: each byte below
 * 0x80 leaves a zero bit at a fixed place in its group of four digits. Random tokens fail
 * within a group or two, so most opaque ids and hashes never reach `atob`.
 */
function mayEncodeAscii(value: string): boolean {
  const n = value.length;
  for (let i = 0; i < n; i += 4) {
    const d0 = base64Index(value.charCodeAt(i));
    if (d0 < 0) return true;
    if (d0 >= 32) return false;
    if (i + 2 >= n) return true;
    const d1 = base64Index(value.charCodeAt(i + 1));
    const d2 = base64Index(value.charCodeAt(i + 2));
    if (d1 < 0 || d2 < 0) return true;
    if ((d1 & 15) >= 8) return false;
    if (i + 3 >= n) return true;
    const d3 = base64Index(value.charCodeAt(i + 3));
    if (d3 < 0) return true;
    if ((d2 & 3) >= 2) return false;
  }
  return true;
}

/** A UTF-7 shifted sequence (`+ADw-` is `<`) that encodes ASCII, the only part XSS needs. */
const UTF7_RUN = /\+(A[A-H][A-Za-z0-9+/]*)-?/g;

/**
 * Decodes UTF-7 shifted sequences that stand for ASCII characters; old browsers honoured a
 * UTF-7 charset, so `+ADw-script+AD4-` was `<script>`.
 */
export function decodeUtf7(s: string): string {
  return s.replace(UTF7_RUN, (whole, run: string) => {
    let bits = 0;
    let acc = 0;
    let out = "";
    for (const ch of run) {
      acc = (acc << 6) | B64_ALPHABET.indexOf(ch);
      bits += 6;
      if (bits >= 16) {
        bits -= 16;
        const unit = (acc >> bits) & 0xffff;
        if (unit < 0x09 || unit > 0x7e) return whole;
        out += String.fromCharCode(unit);
      }
    }
    return out.length > 0 ? out : whole;
  });
}

const B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/** 1 for the ASCII codes of {@link B64_ALPHABET} (A-Z a-z 0-9 + /), the digits of a run. */
const BASE64_DIGIT: Uint8Array = Uint8Array.from(
  { length: 128 },
  (_, c) => B64_ALPHABET.indexOf(String.fromCharCode(c)) >= 0 ? 1 : 0,
);
/** Base64 runs inside a larger value (serialised objects, JSON fields, cookies). */
const MAX_BASE64_RUNS = 4;
const MIN_BASE64_RUN = 12;

/**
 * Decodes base64 runs embedded in a value (not only a value that is base64 as a whole)
 * when they decode to code-like text. A run long enough to matter holds one of every
 * {@link MIN_BASE64_RUN}-th character (12 characters in a row hold every position modulo
 * 12), so the scan reads only those and widens each digit it finds into its run: ordinary
 * text's words, shorter than that, are read about once, not a character at a time (a regex
 * retried at every letter cost more than all the decoding).
 *
 * @returns the decoded texts, at most four
 */
export function decodeBase64Runs(value: string): string[] {
  const out: string[] = [];
  const n = value.length;
  // Where the run read last ended: the next one starts after it.
  let done = 0;
  for (let p = MIN_BASE64_RUN - 1; p < n; p += MIN_BASE64_RUN) {
    if (!isBase64Digit(value, p)) continue;
    let start = p;
    while (start > done && isBase64Digit(value, start - 1)) start--;
    let i = p + 1;
    while (i < n && isBase64Digit(value, i)) i++;
    done = i;
    if (i - start >= MIN_BASE64_RUN) {
      let end = i;
      while (end < n && end - i < 2 && value.charCodeAt(end) === 61 /* = */) end++;
      const text = decodeBase64Code(value.slice(start, end), true);
      if (text !== undefined) {
        out.push(text);
        if (out.length >= MAX_BASE64_RUNS) break;
      }
    }
    // The next position read is past the run.
    while (p + MIN_BASE64_RUN < i) p += MIN_BASE64_RUN;
  }
  return out;
}

function isBase64Digit(value: string, at: number): boolean {
  const c = value.charCodeAt(at);
  return c < 128 && BASE64_DIGIT[c] === 1;
}

/** ASCII lower case, cheaper than `toLowerCase()` on mostly-ASCII text and locale-free. */
export function foldCase(s: string): string {
  return s.toLowerCase();
}
