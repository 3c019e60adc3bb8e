/**
 * Cross-site scripting detector.
 *
 * A value is judged in the contexts a template could place it in: HTML text (does it open
 * a script, an event handler, a dangerous URL, embedded content?), a quoted or unquoted
 * attribute value (does it break out and add a handler?), a URL attribute (`javascript:`),
 * a script string (does it close the string and call something?). Markup that cannot run
 * code - `<b>`, `a < b`, plain links - passes.
 */

import type { DetectorInput, Finding } from "./types.ts";
import { type HtmlAttr, type HtmlTag, lexHtml } from "./html_lexer.ts";
import { makeFinding } from "./make_finding.ts";
import { analyzeJs } from "./js_context.ts";

/**
 * `on` + event name, judged on the local name (`x:ontimer`) and only its letters, since old
 * parsers accepted junk after it (`onload!#$%=`); the word list keeps English words out.
 */
const EVENT_HANDLER = /^["'`]*(?:[a-z]+:)?(on[a-z]{3,})([^a-z]*)$/;
/** Events common enough in payloads to recognise even with junk after the name. */
const JUNK_TOLERANT: ReadonlySet<string> = new Set([
  "onload",
  "onerror",
  "onclick",
  "onfocus",
  "onmouseover",
  "onblur",
  "ontoggle",
]);
const NOT_EVENTS: ReadonlySet<string> = new Set([
  "one",
  "only",
  "online",
  "onto",
  "onset",
  "ongoing",
  "onward",
  "onwards",
  "onion",
  "onboarding",
  "onsite",
]);
/** Attributes whose value the browser navigates to or loads. */
const URL_ATTRS: ReadonlySet<string> = new Set([
  "href",
  "src",
  "action",
  "formaction",
  "data",
  "xlink:href",
  "background",
  "poster",
  "lowsrc",
  "dynsrc",
  "code",
  "codebase",
  "to",
  "from",
  "values",
  "by",
  "content",
  "location",
  "ev:handler",
  "folder",
  "classid",
  "srcset",
]);
/** URL schemes that run script or render attacker HTML in the page's origin. */
const SCRIPT_URL =
  /^(?:javascript|vbscript|livescript|mocha|data:(?:text\/html|text\/xml|image\/svg|application\/(?:xhtml|x-)))/;
/** In attribute values, junk before the scheme (`\xE2\x80\xA9javascript:`, a backtick). */
const SCRIPT_URL_LENIENT = new RegExp(`^[^a-z0-9]{0,8}(?:${SCRIPT_URL.source.slice(4, -1)})`);
/**
 * A `javascript:` URL that calls something, inside other text (`?goto=javascript:alert(1)`,
 * `getURL("javascript:...")`); `javascript:void(0)` links are common in page snapshots.
 */
const SCRIPT_URL_CALL =
  /(?:^|[\s=,"'`(:])(?:javascript|vbscript)\s*:(?!\s*(?:void\b|;|$))[^\n]{0,100}?[\w$\])]\s*[(`]/i;
const URL_PAYLOAD = /[(`=<]|base64/;
/** `javascript:void(0)` and `javascript:;` placeholders do nothing (spaces already removed). */
const INERT_SCRIPT_URL = /^javascript:(?:void\(?0\)?|undefined|false|null)?;?$/;
/** CSS that runs script (IE expressions, bindings) or pulls attacker styles. */
const SCRIPT_CSS = /expression\s*\(|behaviou?r\s*:|-moz-binding|javascript:|@import/;
/** Whitespace and control characters browsers ignore inside URL schemes (`java\tscript:`). */
// deno-lint-ignore no-control-regex -- browsers drop exactly these control characters
const URL_NOISE = /[\x00-\x20\x7f]+/g;
const CSS_COMMENT = /\/\*.*?\*\//gs;
/** Charsets whose decoding turns ASCII-looking bytes into `<` and `>`. */
const UNUSUAL_CHARSET = /utf-?7|imap|mac-|x-|ibm|ebcdic|utf-?16|utf-?32/i;
/** Tags that embed other documents or redirect the page. */
const EMBED_TAGS: ReadonlySet<string> = new Set([
  "iframe",
  "frame",
  "frameset",
  "object",
  "embed",
  "applet",
  "portal",
  "xml",
  "import",
]);
/**
 * A script string closed by the value, followed by an operator or `;`, then a call of a
 * script sink (`';alert(1)//`, `"-confirm(1)-"`). Sinks are named because arbitrary calls
 * (`"; foo(`) are common in code samples.
 */
const JS_BREAKOUT =
  /['"`][\s)}\]]*(?:[;,+\-*/|&^%=<>?:]|\binstanceof\b|\bin\b)[\s(!~+\-]*(?:alert|prompt|confirm|eval|Function|setTimeout|setInterval|fetch|import|atob|document\s*[.[]|window\s*[.[]|top\s*[.[]|self\s*[.[]|parent\s*[.[]|location\b|constructor\b|new\s+Image)\s*[([`=.]/;
/** Cheap prefilter: none of these, no XSS. */
const XSS_SYNTAX = /[<>"'`:(]/;

/** The strongest XSS rule of a value. */
export interface XssVerdict {
  readonly rule: string;
  readonly score: number;
  readonly offset: number;
}

/**
 * Judges one decoded value as an XSS candidate in every context.
 *
 * @param text decoded value
 * @returns the strongest verdict, or undefined
 */
export function analyzeXss(text: string): XssVerdict | undefined {
  if (text.length < 4 || !XSS_SYNTAX.test(text)) return undefined;
  let best: XssVerdict | undefined;
  const hit = (rule: string, score: number, offset: number) => {
    if (best === undefined || score > best.score) best = { rule: `xss.${rule}`, score, offset };
  };
  if (text.includes("<")) {
    const tags = lexHtml(text);
    // Whole markup documents (editor content, page snapshots in telemetry) legitimately
    // contain scripts and embeds; only handlers and script URLs keep their weight there.
    const discount = isDocument(tags) ? -25 : 0;
    for (const tag of tags) {
      judgeTag(tag, hit, 0, tag.start, discount);
      if (tag.name === "style" && !tag.closing) judgeStyleBlock(text, tag, hit, discount);
      // Markup inside attribute values runs where parsers disagree about quoting
      // (`<img alt="`><img src=x onerror=...>">`, IE's `<comment>`).
      for (const attr of tag.attrs) {
        if (attr.value === undefined || !attr.value.includes("<")) continue;
        for (const inner of lexHtml(attr.value)) judgeTag(inner, hit, -5, tag.start, discount);
      }
    }
  }
  for (const quote of ATTR_QUOTES) {
    const at = text.indexOf(quote);
    if (at < 0) continue;
    const [tag] = lexHtml(text.slice(at + 1), true);
    if (tag !== undefined) judgeTag(tag, hit, -5, at);
  }
  const space = text.search(FIRST_SPACE);
  if (space >= 0 && text.includes("=")) {
    const [tag] = lexHtml(text.slice(space), true);
    if (tag !== undefined) judgeTag(tag, hit, -10, space);
  }
  const url = text.replace(URL_NOISE, "").toLowerCase();
  // A value that is itself a script URL (for href/src templates); the rest must read as
  // code or markup, so "javascript: the good parts" stays a search term.
  if (
    SCRIPT_URL.test(url) && URL_PAYLOAD.test(url.slice(url.indexOf(":") + 1)) &&
    !INERT_SCRIPT_URL.test(url)
  ) hit("url", 80, 0);
  else {
    const call = SCRIPT_URL_CALL.exec(text);
    if (call !== null) hit("url", 75, call.index);
  }
  const js = JS_BREAKOUT.exec(text);
  if (js !== null) hit("script_breakout", 75, js.index);
  const code = analyzeJs(text);
  if (code !== undefined) hit(code.rule, code.score, 0);
  if (text.includes("(") && SCRIPT_CSS.test(cssText(text))) {
    hit("css", 60, 0);
  }
  return best;
}

const ATTR_QUOTES = ['"', "'", "`"] as const;
const FIRST_SPACE = /\s/;

type Hit = (rule: string, score: number, offset: number) => void;

function isEventHandler(name: string): boolean {
  const m = EVENT_HANDLER.exec(name);
  if (m === null || NOT_EVENTS.has(m[1]!)) return false;
  return m[2]!.length === 0 || JUNK_TOLERANT.has(m[1]!);
}

const STYLE_END = /<\/style/i;

const CSS_HEX_ESCAPE = /\\([0-9a-fA-F]{1,6})\s?/g;
const CSS_CHAR_ESCAPE = /\\([^0-9a-fA-F\n])/g;

/** CSS as the browser reads it: escapes resolved (`\6a ava\script`), comments removed. */
function cssText(css: string): string {
  let text = css;
  if (text.includes("\\")) {
    text = text.replace(CSS_HEX_ESCAPE, (_, hex: string) => {
      const cp = parseInt(hex, 16);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : "";
    }).replace(CSS_CHAR_ESCAPE, "$1");
  }
  return text.replace(CSS_COMMENT, "").toLowerCase();
}

function judgeStyleBlock(text: string, tag: HtmlTag, hit: Hit, discount: number): void {
  const rest = text.slice(tag.end);
  const close = rest.search(STYLE_END);
  if (SCRIPT_CSS.test(cssText(close < 0 ? rest : rest.slice(0, close)))) {
    hit("style_script", 80 + discount, tag.start);
  }
}

/** Layout tags that make up real documents and rarely appear in payloads. */
const LAYOUT_TAGS: ReadonlySet<string> = new Set([
  "html",
  "head",
  "body",
  "div",
  "p",
  "span",
  "ul",
  "li",
  "table",
  "tr",
  "td",
  "h1",
  "h2",
  "h3",
  "title",
  "link",
  "meta",
]);

function isDocument(tags: readonly HtmlTag[]): boolean {
  let layout = 0;
  let closing = 0;
  for (const tag of tags) {
    if (tag.closing) closing++;
    else if (LAYOUT_TAGS.has(tag.name) && tag.complete) layout++;
  }
  return layout >= 3 && closing >= 2;
}

function judgeTag(
  tag: HtmlTag,
  hit: Hit,
  bonus: number,
  offset = tag.start,
  discount = 0,
): void {
  const partial = tag.complete ? 0 : -5;
  if (tag.closing) {
    if (tag.name === "script") hit("script_close", 60 + discount, offset);
    return;
  }
  if (tag.name === "script") {
    // `<script` cut short without a source is as likely prose ("binary<script is...").
    const src = tag.attrs.some((a) => a.name === "src" || a.name.endsWith("href"));
    hit("script", (tag.complete || src ? 90 : 60) + discount, offset);
  } else if (EMBED_TAGS.has(tag.name)) hit("embed", 60 + discount, offset);
  else if (tag.name === "style") hit("style", 55 + discount, offset);
  for (const attr of tag.attrs) judgeAttr(tag, attr, hit, bonus + partial, offset, discount);
}

function judgeAttr(
  tag: HtmlTag,
  attr: HtmlAttr,
  hit: Hit,
  bonus: number,
  offset: number,
  discount: number,
): void {
  const { name, value } = attr;
  if (isEventHandler(name) && value !== undefined) {
    // `onClick={() => ...}` is JSX source code (React components in editors and uploads).
    const jsx = value.startsWith("{");
    hit("event_handler", (jsx ? 55 : 85) + bonus, offset);
    return;
  }
  if (value === undefined) return;
  if (URL_ATTRS.has(name)) {
    const url = value.replace(URL_NOISE, "").toLowerCase();
    // SVG animation `values` is a `;`-separated list and meta refresh reads `N;url=...`:
    // any item may become the URL.
    const items = name === "values" || name === "content"
      ? url.replaceAll("url=", "").split(";")
      : [url];
    if (items.some((item) => SCRIPT_URL_LENIENT.test(item) && !INERT_SCRIPT_URL.test(item))) {
      hit("script_url", 85 + bonus, offset);
    } else if (url.startsWith("data:") && SCRIPT_CSS.test(url)) {
      hit("style_script", 80 + bonus, offset);
    }
    if (EMBED_TAGS.has(tag.name) && url.length > 0) {
      hit("embed", 75 + bonus + discount, offset);
    } else if (tag.name === "base" && name === "href") hit("base", 75 + bonus + discount, offset);
    else if (tag.name === "meta" && name === "content" && url.includes("url=")) {
      hit("meta_refresh", 75 + bonus + discount, offset);
    }
  } else if (name === "attributename" && isEventHandler(value.toLowerCase())) {
    // SVG <set>/<animate> writing an event handler attribute.
    hit("event_handler", 80 + bonus, offset);
  } else if (value.startsWith("&{")) {
    // Netscape JavaScript entities: `&{alert(1)}` in any attribute value.
    hit("script_entity", 75 + bonus, offset);
  } else if (name === "datasrc" || name === "dataformatas") {
    // IE data binding renders an XML island's content as HTML.
    hit("data_binding", 75 + bonus, offset);
  } else if (tag.name === "meta" && name === "charset" && UNUSUAL_CHARSET.test(value)) {
    // Switching to UTF-7 or another exotic charset turns harmless bytes into markup.
    hit("charset", 75 + bonus + discount, offset);
  } else if (name === "srcdoc") {
    hit("srcdoc", 85 + bonus, offset);
  } else if (name === "style") {
    if (SCRIPT_CSS.test(cssText(value))) {
      hit("style_script", 80 + bonus, offset);
    }
  }
}

/**
 * Detector entry point: XSS in one decoded input.
 *
 * @param input the decoded input
 * @returns an `xss` finding or undefined
 */
export function xss(input: DetectorInput): Finding | undefined {
  const verdict = analyzeXss(input.decoded);
  if (verdict === undefined) return undefined;
  // Evidence starts a little before the hit so the breakout that led there stays visible.
  const at = Math.max(0, verdict.offset - 10);
  return makeFinding(input, "xss", verdict.score, verdict.rule, input.decoded, at);
}
