/**
 * HTML character reference decoding, as lenient as browsers are.
 *
 * Browsers decode `&#106;`, `&#x6A`, `&#0000106` (no semicolon, leading zeros) and a few
 * legacy named references without a semicolon; XSS payloads rely on all of these to hide
 * `javascript:` and `<` from naive filters.
 */

/** Named references that matter for markup and script syntax, plus the everyday ones. */
const NAMED: ReadonlyMap<string, string> = new Map([
  ["lt", "<"],
  ["gt", ">"],
  ["amp", "&"],
  ["quot", '"'],
  ["apos", "'"],
  ["nbsp", "\u00a0"],
  ["tab", "\t"],
  ["newline", "\n"],
  ["colon", ":"],
  ["semi", ";"],
  ["comma", ","],
  ["period", "."],
  ["sol", "/"],
  ["bsol", "\\"],
  ["lpar", "("],
  ["rpar", ")"],
  ["lsqb", "["],
  ["rsqb", "]"],
  ["lbrack", "["],
  ["rbrack", "]"],
  ["lcub", "{"],
  ["rcub", "}"],
  ["lbrace", "{"],
  ["rbrace", "}"],
  ["excl", "!"],
  ["quest", "?"],
  ["equals", "="],
  ["plus", "+"],
  ["num", "#"],
  ["dollar", "$"],
  ["percnt", "%"],
  ["ast", "*"],
  ["midast", "*"],
  ["vert", "|"],
  ["verbar", "|"],
  ["grave", "`"],
  ["lowbar", "_"],
  ["hat", "^"],
  ["commat", "@"],
  ["copy", "\u00a9"],
  ["reg", "\u00ae"],
]);

/** Legacy names browsers also accept without the trailing semicolon. */
const LEGACY_NO_SEMICOLON: ReadonlySet<string> = new Set([
  "lt",
  "gt",
  "amp",
  "quot",
  "nbsp",
  "copy",
  "reg",
]);

const MAX_NAME = 8;
/** The first letters of {@link LEGACY_NO_SEMICOLON}, lower-case: any other name needs its `;`. */
const LEGACY_FIRST: ReadonlySet<number> = new Set(
  [...LEGACY_NO_SEMICOLON].map((name) => name.charCodeAt(0)),
);

function isAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || ((c | 0x20) >= 97 && (c | 0x20) <= 122);
}

/**
 * Decodes numeric and common named character references.
 *
 * @param s text that may contain references
 * @returns the text with every recognised reference replaced
 */
export function decodeEntities(s: string): string {
  let i = s.indexOf("&");
  if (i < 0) return s;
  // Text between references is copied whole.
  let out = "";
  let last = 0;
  for (; i >= 0; i = s.indexOf("&", i + 1)) {
    const decoded = s[i + 1] === "#" ? numericAt(s, i) : namedAt(s, i);
    if (decoded === undefined) continue;
    out += s.slice(last, i) + decoded.text;
    last = decoded.end;
    i = decoded.end - 1;
  }
  return last === 0 ? s : out + s.slice(last);
}

interface Decoded {
  readonly text: string;
  /** Index just past the reference (and its semicolon). */
  readonly end: number;
}

function numericAt(s: string, at: number): Decoded | undefined {
  let i = at + 2;
  const hex = s[i] === "x" || s[i] === "X";
  if (hex) i++;
  const start = i;
  let cp = 0;
  while (i < s.length && i - start < 12) {
    const c = s.charCodeAt(i);
    let d: number;
    if (c >= 48 && c <= 57) d = c - 48;
    else if (hex && (c | 0x20) >= 97 && (c | 0x20) <= 102) d = (c | 0x20) - 87;
    else break;
    cp = cp * (hex ? 16 : 10) + d;
    i++;
  }
  if (i === start) return undefined;
  if (s[i] === ";") i++;
  // Browsers turn NUL and out-of-range references into U+FFFD.
  const text = cp === 0 || cp > 0x10ffff ? "\ufffd" : String.fromCodePoint(cp);
  return { text, end: i };
}

function namedAt(s: string, at: number): Decoded | undefined {
  let i = at + 1;
  while (i < s.length && i - at <= MAX_NAME && isAlnum(s.charCodeAt(i))) i++;
  if (i === at + 1) return undefined;
  const semicolon = s.charCodeAt(i) === 59;
  // Without a semicolon only a legacy name decodes: other names are not even copied
  // (a form body's `&name=` has one at every field).
  if (!semicolon && !LEGACY_FIRST.has(s.charCodeAt(at + 1) | 0x20)) return undefined;
  const name = s.slice(at + 1, i);
  const lower = name.toLowerCase();
  if (semicolon) {
    const text = NAMED.get(name) ?? NAMED.get(lower);
    return text === undefined ? undefined : { text, end: i + 1 };
  }
  // Without a semicolon, only the legacy names decode (and only their exact prefix).
  for (let len = Math.min(name.length, 4); len >= 2; len--) {
    const prefix = lower.slice(0, len);
    if (LEGACY_NO_SEMICOLON.has(prefix)) {
      return { text: NAMED.get(prefix)!, end: at + 1 + len };
    }
  }
  return undefined;
}
