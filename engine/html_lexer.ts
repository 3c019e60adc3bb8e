/**
 * A browser-like HTML tag tokenizer for XSS detection.
 *
 * It follows the HTML5 tokenizer where attackers exploit it: a tag opens only with `<` and an
 * ASCII letter, `/` separates attributes (`<svg/onload=...>`), attribute names may start with
 * anything but whitespace, `/` and `>`, unquoted values run to whitespace or `>`, and a tag
 * without its closing `>` still counts (the page supplies one later). It can also start
 * inside a tag's attribute list, which is where a value lands after breaking out of a quoted
 * attribute.
 *
 * Where legacy browsers and filters read markup differently it takes the reading that finds
 * more: control characters separate attributes (old IE treated `\x0b` and `\x11` as space),
 * and a `<` followed by a letter inside a tag starts a new tag (`<b <script>`, the
 * `<scr<script>ipt>` left over once a filter strips the inner tag).
 */

/** One attribute of a tag; `value` is undefined for a bare name. */
export interface HtmlAttr {
  /** Lower-cased, with control characters removed. */
  readonly name: string;
  readonly value: string | undefined;
  /** True for a quoted value whose closing quote never came (it swallows the page after it). */
  readonly unterminated: boolean;
}

/** One start or end tag. */
export interface HtmlTag {
  /**
   * Lower-cased local tag name (`svg:script` and `html:script` are scripts in XML documents);
   * empty for the synthetic tag of an attribute-list start.
   */
  readonly name: string;
  /** Lower-cased namespace prefix (`svg` of `<svg:rect>`); empty when there is none. */
  readonly prefix: string;
  readonly closing: boolean;
  readonly attrs: readonly HtmlAttr[];
  /** Offset of `<` (or 0 for an attribute-list start). */
  readonly start: number;
  /** Offset just past the tag's `>` (or the end of the text). */
  readonly end: number;
  /** False when the text ended before `>`. */
  readonly complete: boolean;
}

/** Tags read at most per value. */
export const MAX_TAGS = 64;
/**
 * Tags nested inside another tag's attribute list that are read again on their own; each
 * re-read scans to the next `>`, so the count is bounded to keep `<a <a <a ...` linear.
 */
const MAX_NESTED = 4;
const MAX_ATTRS = 32;
/** Characters dropped from attribute names, as some parsers and legacy browsers do. */
// deno-lint-ignore no-control-regex -- control characters are what gets dropped
const CONTROL = /[\x00-\x1f\x7f]/g;

/** Whitespace and the control characters legacy parsers also treated as separators. */
function isSpace(c: number): boolean {
  return c <= 32 && c !== 0;
}

/** `<` and a letter or `/`: the start of another tag. */
function opensTag(text: string, at: number): boolean {
  if (text.charCodeAt(at) !== 60) return false;
  const c = text.charCodeAt(at + 1);
  return c === 47 || isLetter(c);
}

function isLetter(c: number): boolean {
  const l = c | 0x20;
  return l >= 97 && l <= 122;
}

/**
 * Reads the tags of a text.
 *
 * @param text decoded text
 * @param inTag start inside an attribute list (after an attribute-value breakout)
 * @param maxTags tags read at most (a caller that judges the first only reads one)
 * @returns tags in order, at most {@link MAX_TAGS}
 */
export function lexHtml(text: string, inTag = false, maxTags = MAX_TAGS): HtmlTag[] {
  const tags: HtmlTag[] = [];
  const n = text.length;
  let i = 0;
  let nested = 0;
  const next = (r: AttrList): number => r.nested >= 0 && nested++ < MAX_NESTED ? r.nested : r.end;
  if (inTag) {
    const r = readAttributes(text, 0);
    tags.push({
      name: "",
      prefix: "",
      closing: false,
      attrs: r.attrs,
      start: 0,
      end: r.end,
      complete: r.complete,
    });
    i = next(r);
  }
  while (i < n && tags.length < maxTags) {
    const lt = text.indexOf("<", i);
    if (lt < 0 || lt + 1 >= n) break;
    const c = text.charCodeAt(lt + 1);
    if (c === 33 || c === 63) {
      // Comment and CDATA contents are read as markup: parsers disagree on where they end
      // (`--!>`, IE conditional comments, CDATA in HTML), and payloads live in that gap.
      // Other `<!...>` and `<?...?>` are bogus comments up to the first `>`, as browsers do.
      if (text.startsWith("<!--", lt)) i = lt + 4;
      else if (text.startsWith("<![CDATA[", lt)) i = lt + 9;
      else {
        const close = text.indexOf(">", lt);
        i = close < 0 ? n : close + 1;
      }
      continue;
    }
    const closing = c === 47;
    const nameStart = closing ? lt + 2 : lt + 1;
    if (!isLetter(text.charCodeAt(nameStart))) {
      i = lt + 1;
      continue;
    }
    let j = nameStart;
    while (j < n) {
      const d = text.charCodeAt(j);
      // `+` ends the name too: payloads meant to be form-decoded write `<script+src=...>`.
      if (isSpace(d) || d === 47 || d === 62 || d === 43 || opensTag(text, j)) break;
      j++;
    }
    const qualified = text.slice(nameStart, j).toLowerCase();
    const colon = qualified.lastIndexOf(":");
    const name = colon < 0 ? qualified : qualified.slice(colon + 1);
    const prefix = colon < 0 ? "" : qualified.slice(0, colon);
    const r = readAttributes(text, j);
    tags.push({
      name,
      prefix,
      closing,
      attrs: r.attrs,
      start: lt,
      end: r.end,
      complete: r.complete,
    });
    // The browser reads on to `>`; a filter that strips tags may also see the inner one.
    i = next(r);
  }
  return tags;
}

interface AttrList {
  readonly attrs: HtmlAttr[];
  readonly end: number;
  readonly complete: boolean;
  /** Offset of a `<` that opens another tag inside the attribute list, or -1. */
  readonly nested: number;
}

function readAttributes(text: string, at: number): AttrList {
  const attrs: HtmlAttr[] = [];
  const n = text.length;
  let i = at;
  let nested = -1;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (isSpace(c) || c === 47 || c === 43) {
      i++;
      continue;
    }
    if (c === 62) return { attrs, end: i + 1, complete: true, nested };
    if (nested < 0 && opensTag(text, i)) nested = i;
    // Past the attributes kept, the rest is only read for where the tag ends: no copies.
    const keep = attrs.length < MAX_ATTRS;
    const nameStart = i;
    i++;
    while (i < n) {
      const d = text.charCodeAt(i);
      if (isSpace(d) || d === 47 || d === 62 || d === 61) break;
      i++;
    }
    const nameEnd = i;
    let k = i;
    while (k < n && isSpace(text.charCodeAt(k))) k++;
    let valueStart = -1;
    let valueEnd = -1;
    let unterminated = false;
    if (text.charCodeAt(k) === 61) {
      k++;
      while (k < n && isSpace(text.charCodeAt(k))) k++;
      const q = text.charCodeAt(k);
      // Backticks quoted attribute values in IE; payloads still use them.
      if (q === 34 || q === 39 || q === 96) {
        const close = text.indexOf(text[k]!, k + 1);
        valueStart = k + 1;
        valueEnd = close < 0 ? n : close;
        unterminated = close < 0;
        i = close < 0 ? n : close + 1;
      } else {
        const vStart = k;
        while (k < n && !isSpace(text.charCodeAt(k)) && text.charCodeAt(k) !== 62) k++;
        valueStart = vStart;
        valueEnd = k;
        i = k;
      }
    }
    if (keep) {
      const value = valueStart < 0 ? undefined : text.slice(valueStart, valueEnd);
      attrs.push({ name: attrName(text, nameStart, nameEnd), value, unterminated });
    }
  }
  return { attrs, end: n, complete: false, nested };
}

/** An attribute's name as judged: lower-cased, control characters dropped. */
function attrName(text: string, start: number, end: number): string {
  const name = text.slice(start, end).toLowerCase();
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return name.replace(CONTROL, "");
  }
  return name;
}
