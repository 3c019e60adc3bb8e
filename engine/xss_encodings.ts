/**
 * XSS hidden in the encoding itself rather than in the decoded markup.
 *
 * The normaliser peels every layer it knows, which is right for most detectors but loses
 * what the layers say: a lone `<` written as `&#x003C;` is a filter probe, `+ADw-` is markup
 * for a browser tricked into UTF-7, CSS escapes (`\0075`) read as octal JavaScript escapes,
 * and `¼script¾` becomes `<script>` for a browser that drops the eighth bit (IE's US-ASCII).
 * These readings are taken from the raw value, only when its characters call for them.
 */

import type { DetectorInput } from "./types.ts";
import { decodeMarkup, percentDecode, type PlusMode } from "./normalize.ts";
import { SCRIPT_URL, URL_NOISE } from "./xss_tags.ts";

/** A verdict about the encoding of a value. */
export interface EncodingVerdict {
  readonly rule: string;
  readonly score: number;
}

/** A value that is nothing but a markup delimiter, once decoded. */
const DELIMITER = /^\s*[<>]\s*$/;
/** UTF-7 for `<` followed by a tag name or `/`, and for `>`: markup in a UTF-7 page. */
const UTF7_OPEN = /\+ADw-?(?:[A-Za-z/!]|\+AC8-?)/;
const UTF7_CLOSE = /\+AD4-?/;
/**
 * Six or more numeric character references in a row for printable ASCII (`&#106;&#97;...`,
 * `&#0000106`): spelling plain letters this way only serves to slip markup past a filter.
 */
const ASCII_REFERENCES =
  /(?:&#(?:x0*[2-7][0-9a-f]|0*(?:3[2-9]|[4-9]\d|1[01]\d|12[0-6]))(?![0-9a-f]);?\s*){6}/i;
/** A tag opening: the references above sit in markup. */
const TAG_OPEN = /<[a-z]/i;
/** Sources whose wire format percent-encodes `+` when it is a plus. */
const FORM_ENCODED: ReadonlySet<string> = new Set(["query", "query_name", "form"]);

/**
 * Judges the way a value is encoded: a lone delimiter spelled in an encoding the transport
 * does not need (`&#x003C;`, `\x3c`, `%253C`, the probes that map what a filter lets
 * through), markup whose letters are spelled as numeric references, or markup spelled in
 * UTF-7. A search for `<` arrives percent-encoded once and passes.
 *
 * @param input the decoded input with its raw value
 * @returns the verdict, or undefined
 */
export function judgeEncoding(input: DetectorInput): EncodingVerdict | undefined {
  const { decoded, raw } = input;
  const delimiter = decoded.length <= 8 && DELIMITER.test(decoded);
  const references = raw.includes("&#") || raw.includes("%26%23");
  if (!delimiter && !references && !raw.includes("AD")) return undefined;
  const transported = input.input.source === "json"
    ? raw
    : percentDecode(raw, plusOf(input) === "space");
  if (references && TAG_OPEN.test(decoded) && ASCII_REFERENCES.test(transported)) {
    return { rule: "entity_obfuscation", score: 70 };
  }
  if (delimiter) {
    return DELIMITER.test(transported) ? undefined : { rule: "encoded_delimiter", score: 70 };
  }
  if (UTF7_OPEN.test(transported) && UTF7_CLOSE.test(transported)) {
    return { rule: "utf7_markup", score: 75 };
  }
  return undefined;
}

/** A backslash, literal or percent-encoded: the start of an escape some decoder will read. */
const BACKSLASH = /\\|%5c/i;
/** Characters that lose their eighth bit to become `<` and `>`. */
const HIGH_BIT_MARKUP = /[\u00bc\u00be]/;
const HIGH_BIT = /[\u0080-\u00ff]/g;
/**
 * A short tag wedged inside a word (`o<x>nfocus`, `alert<x>(1)`): filters that strip unknown
 * tags join the word again, so the stripped reading is what the browser gets.
 */
const WEDGED_TAG = /(?<=[\w"'=])<\/?[a-z]{1,8}>(?=[\w(=])/gi;
/** Whitespace or NUL inside a tag name (`<scr&#x9;ipt>`), which old parsers skipped. */
/**
 * A value written into a JavaScript string that becomes a URL (`location = '...'`): the
 * string's escapes (`\n`, `\t`, and `\j` for `j`) resolve first, then the URL parser drops
 * the whitespace they leave, so `ja\nva\tscript:` and `\j\av\a\s\cr\i\pt\:` are `javascript:`.
 */
const JS_STRING_ESCAPE = /\\([^xu0-7])/g;
const JS_ESCAPES: Readonly<Record<string, string>> = {
  n: "\n",
  t: "\t",
  r: "\r",
  b: "\b",
  f: "\f",
  v: "\v",
};
const SPLIT_TAG_NAME = /(<\/?[a-z]+)[\t\n\r\0]+(?=[a-z]+[\s>/])/gi;

/**
 * Other readings of a value worth judging as markup: without JavaScript escapes (for CSS
 * escapes) and with the eighth bit stripped.
 *
 * @param input the decoded input with its raw value
 * @returns the readings that differ from the decoded text, often none
 */
export function otherReadings(input: DetectorInput): string[] {
  const out: string[] = [];
  const { decoded, raw } = input;
  if (BACKSLASH.test(raw) && (decoded.includes("<") || decoded.includes("="))) {
    const markup = decodeMarkup(raw, plusOf(input));
    if (markup !== decoded) out.push(markup);
  }
  if (decoded.includes("<")) {
    const joined = decoded.replace(WEDGED_TAG, "");
    if (joined !== decoded) out.push(joined);
    const named = decoded.replace(SPLIT_TAG_NAME, "$1");
    if (named !== decoded) out.push(named);
  }
  if (FULLWIDTH_LT.test(decoded)) {
    // `＜script＞`: best-fit conversions (IIS, ASP.NET, legacy code pages) make it ASCII markup.
    out.push(decoded.replace(FULLWIDTH, fullwidthToAscii));
  }
  if (HIGH_BIT_MARKUP.test(decoded)) {
    out.push(decoded.replace(HIGH_BIT, (c) => String.fromCharCode(c.charCodeAt(0) & 0x7f)));
  }
  if (decoded.indexOf("\\") >= 0 && decoded.indexOf(":") >= 0 && decoded.length <= 2048) {
    const js = decoded.replace(JS_STRING_ESCAPE, jsStringEscape);
    if (SCRIPT_URL.test(js.replace(URL_NOISE, "").toLowerCase())) out.push(js);
  }
  return out;
}

const FULLWIDTH_LT = /[\uff1c\ufe64]/;
/** Full-width ASCII forms and the small less-than and greater-than signs. */
const FULLWIDTH = /[\uff01-\uff5e\ufe64\ufe65]/g;

function fullwidthToAscii(c: string): string {
  const code = c.charCodeAt(0);
  if (code === 0xfe64) return "<";
  if (code === 0xfe65) return ">";
  return String.fromCharCode(code - 0xfee0);
}

/** One escape of a JavaScript string literal as the string holds it. */
function jsStringEscape(_: string, c: string): string {
  return JS_ESCAPES[c] ?? c;
}

function plusOf(input: DetectorInput): PlusMode {
  return FORM_ENCODED.has(input.input.source) ? "space" : "literal";
}
