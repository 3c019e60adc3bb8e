/**
 * Texts hidden inside a decoded value that an application decodes again before use: base64
 * (the whole value or runs inside it), JSON nested in a string, and full-width forms folded
 * to ASCII. Each is judged alone by
 * the inspector, within the request's work budget.
 */
import { decodeBase64Code, decodeBase64Runs } from "./normalize.ts";
import { scanJson } from "./json_scan.ts";

const MAX_NESTED_LEAVES = 64;
const PLAIN_KEY = /^[A-Za-z0-9_-]*$/;

/**
 * Lists what a decoded value hides.
 *
 * @param text the decoded value
 * @returns decoded base64 texts and nested JSON strings, possibly none
 */
export function hiddenTexts(text: string): string[] {
  const out: string[] = [];
  const whole = text.length >= 8 ? decodeBase64Code(text) : undefined;
  if (whole !== undefined) out.push(whole);
  else if (text.length >= 12) { for (const run of decodeBase64Runs(text)) out.push(run); }
  const nested = nestedJsonStrings(text);
  if (nested !== undefined) { for (const s of nested) out.push(s); }
  const folded = foldedFullwidth(text);
  if (folded !== undefined) out.push(folded);
  return out;
}

/**
 * Full-width signs that Chinese and Japanese prose does not write (its punctuation is `，`,
 * `？`, `：`, `；`, `（）`, `！`; quotes are `“”`, `「」`): quotes, angle brackets, braces, `\`,
 * backtick, `|`. Only a value with one of them is folded, so a search for
 * `and 1=1，and 1=2` (a full-width comma in an SQL lesson's title) stays as typed.
 */
const FULLWIDTH_SYNTAX = /[\uff02\uff07\uff1c\uff1e\uff3b\uff3c\uff3d\uff40\uff5b\uff5c\uff5d]/;
/** The full-width forms of ASCII (`＜`, `＇`, `（`, `ｓ`), U+FF01 to U+FF5E. */
const FULLWIDTH_ALL = /[\uff01-\uff5e]/g;
/** Kana, CJK ideographs and Hangul: the value is Chinese, Japanese or Korean prose. */
const CJK_LETTER = /[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]/;
/** FULLWIDTH_SYNTAX without `｜`, which Japanese writes between a title and a site's name. */
const PROSE_SYNTAX = /[\uff02\uff07\uff1c\uff1e\uff3b\uff3c\uff3d\uff40\uff5b\uff5d]/;
/**
 * The full-width forms but the punctuation CJK prose writes as its own (`！（），：；？｜`):
 * `スキル：Ｊａｖａ｜Ｐｙｔｈｏｎ｜ＰＨＰ` is a list, not `:Java|Python|PHP`'s pipe.
 */
const FULLWIDTH_NOT_PROSE =
  /[\uff02-\uff07\uff0a\uff0b\uff0d-\uff19\uff1c-\uff1e\uff20-\uff5b\uff5d\uff5e]/g;

/**
 * The text with full-width forms turned into their ASCII letters and signs, as Unicode
 * normalisation (NFKC: Python's `unicodedata`, Java's `Normalizer`, many sign-up and search
 * forms) and Windows' "best fit" code-page conversion (ASP, PHP and command lines on Windows)
 * do before the application reads it: `＜ｓｃｒｉｐｔ＞` reaches it as `<script>`. In a value
 * with kana, ideographs or Hangul the prose's own punctuation stays as typed: a Japanese
 * profile's `＜上級＞Ｊａｖａ｜ｐｙｔｈｏｎ` or a Chinese `比较；ｊａｖａ＜＝＞ｋｏｔｌｉｎ` would
 * otherwise become a pipe or a `;` before a command name. A payload in full-width forms keeps
 * its syntax signs folded, Chinese text around it or not (`＜script＞`, `＇ or 1＝1－－`).
 *
 * @returns the folded text, or undefined when the value has no full-width syntax sign
 */
function foldedFullwidth(text: string): string | undefined {
  if (!FULLWIDTH_SYNTAX.test(text)) return undefined;
  const prose = CJK_LETTER.test(text);
  if (prose && !PROSE_SYNTAX.test(text)) return undefined;
  return text.replace(
    prose ? FULLWIDTH_NOT_PROSE : FULLWIDTH_ALL,
    (c) => String.fromCharCode(c.charCodeAt(0) - 0xfee0),
  );
}

/**
 * String values (and unusual keys) of a JSON document nested inside another value (a query
 * parameter holding JSON, base64-wrapped JSON), so each is judged alone rather than as JSON
 * punctuation.
 *
 * @returns the strings, or undefined when the text is not a JSON object or array
 */
export function nestedJsonStrings(text: string): string[] | undefined {
  const first = text.charCodeAt(0);
  const last = text.charCodeAt(text.length - 1);
  if (!((first === 123 && last === 125) || (first === 91 && last === 93))) return undefined;
  const out: string[] = [];
  const clean = scanJson(text, (_path, value, key) => {
    if (value.length > 2 && (!key || !PLAIN_KEY.test(value))) out.push(value);
    return out.length < MAX_NESTED_LEAVES;
  });
  return clean ? out : undefined;
}
