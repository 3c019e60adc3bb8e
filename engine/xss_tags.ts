/**
 * XSS judgement of one tag and its attributes: scripts, embedded documents, event handlers,
 * URLs with script schemes, script-running CSS, and the legacy attribute tricks (data
 * binding, Netscape script entities, exotic charsets), plus the injection shapes of
 * `html_injection.ts`.
 */

import type { HtmlAttr, HtmlTag } from "./html_lexer.ts";
import { judgeCss, SCRIPT_CSS } from "./css_injection.ts";
import { EMBED_TAGS, judgeInjectedAttr } from "./html_injection.ts";

/** Receives one verdict: rule name without the `xss.` prefix, score, offset in the value. */
export type Hit = (rule: string, score: number, offset: number) => void;

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
export const SCRIPT_URL =
  /^(?:javascript|vbscript|livescript|mocha|data:(?:text\/html|text\/xml|image\/svg|application\/(?:xhtml|x-)))/;
/** In attribute values, junk before the scheme (`\xE2\x80\xA9javascript:`, a backtick). */
const SCRIPT_URL_LENIENT = new RegExp(`^[^a-z0-9]{0,8}(?:${SCRIPT_URL.source.slice(4, -1)})`);
/** `javascript:void(0)` and `javascript:;` placeholders do nothing (spaces already removed). */
export const INERT_SCRIPT_URL = /^javascript:(?:void\(?0\)?|undefined|false|null)?;?$/;
/**
 * Whitespace and control characters browsers ignore inside URL schemes (`java\tscript:`),
 * and U+FFFD, which is what `&#0;` decodes to but old browsers simply dropped.
 */
// deno-lint-ignore no-control-regex -- browsers drop exactly these control characters
export const URL_NOISE = /[\x00-\x20\x7f\ufffd]+/g;
/** Charsets whose decoding turns ASCII-looking bytes into `<` and `>`. */
const UNUSUAL_CHARSET = /utf-?7|imap|mac-|x-|ibm|ebcdic|utf-?16|utf-?32/i;
/** The charset a `<meta>` attribute declares (`charset=` or `content="...; charset=..."`). */
function charsetOf(name: string, value: string): string {
  if (name === "charset") return value;
  const at = name === "content" ? value.toLowerCase().indexOf("charset=") : -1;
  return at < 0 ? "" : value.slice(at + 8);
}

function isEventHandler(name: string): boolean {
  const m = EVENT_HANDLER.exec(name);
  if (m === null || NOT_EVENTS.has(m[1]!)) return false;
  return m[2]!.length === 0 || JUNK_TOLERANT.has(m[1]!);
}

const STYLE_END = /<\/style/i;

/** Judges the CSS of a `<style>` element up to its end tag. */
export function judgeStyleBlock(text: string, tag: HtmlTag, hit: Hit, discount: number): void {
  const rest = text.slice(tag.end);
  const close = rest.search(STYLE_END);
  const css = judgeCss(close < 0 ? rest : rest.slice(0, close), false);
  if (css !== undefined) hit(css.rule, css.score + discount, tag.start);
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
/** Tags only a whole page has. */
const PAGE_TAGS: ReadonlySet<string> = new Set(["html", "head", "body", "title", "link", "meta"]);
/** Layout tags that make a fragment without page tags a document (an article, a template). */
const DOCUMENT_LAYOUT = 6;

/**
 * A whole markup document (page snapshots, templates, articles) rather than an injected
 * fragment: layout and closing tags, and either page-level tags or a body of layout
 * (`<div><div><div>x</div></div>` is a payload's wrapper, not an article).
 */
export function isDocument(tags: readonly HtmlTag[]): boolean {
  let layout = 0;
  let closing = 0;
  let page = false;
  for (const tag of tags) {
    if (tag.closing) closing++;
    else if (LAYOUT_TAGS.has(tag.name) && tag.complete) {
      layout++;
      if (PAGE_TAGS.has(tag.name)) page = true;
    }
  }
  return layout >= 3 && closing >= 2 && (page || layout >= DOCUMENT_LAYOUT);
}

/**
 * Judges one tag and its attributes.
 *
 * @param bonus score adjustment for attributes (negative when the reading is a guess)
 * @param offset where the evidence starts
 * @param discount negative adjustment when the value is a whole document
 */
export function judgeTag(
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
  } else if (
    tag.name === "meta" && UNUSUAL_CHARSET.test(charsetOf(name, value))
  ) {
    // Switching to UTF-7 or another exotic charset turns harmless bytes into markup.
    hit("charset", 75 + bonus + discount, offset);
  } else if (name === "srcdoc") {
    hit("srcdoc", 85 + bonus, offset);
  } else if (name === "style") {
    const css = judgeCss(value, true);
    // Editors write plain declarations; obfuscated CSS in a document is still content.
    if (css !== undefined) {
      hit(css.rule, css.score + bonus + (css.rule === "style_script" ? 0 : discount), offset);
    }
  }
  const injected = judgeInjectedAttr(tag, attr);
  if (injected !== undefined) hit(injected.rule, injected.score + bonus + discount, offset);
}
