/**
 * HTML injection: markup that changes what a page does rather than how it looks.
 *
 * Rich-text fields legitimately carry `<p>`, `<a href>`, `<img src>`, `<span style>`; SVG
 * icons travel in telemetry; whole documents and JSX demos get posted to code sandboxes.
 * None of these needs a tag that re-targets the page (`<base>`, `<meta>`, `<link>`), captures
 * input (`<form>`, `<input>`), embeds another document, restructures the document
 * (`<html>`, `<body>`) or switches the parser into another mode (`<style>`, `<xmp>`,
 * `<math>`, SVG animation). Such a tag, written completely and with attributes, in a value
 * that is not a whole document, is an injection attempt; a breakout before it (`">`, `-->`,
 * `</textarea>`) makes it more so.
 */

import type { HtmlAttr, HtmlTag } from "./html_lexer.ts";

/** Tags that embed other documents, legacy plug-ins or XML islands. */
export const EMBED_TAGS: ReadonlySet<string> = new Set([
  "iframe",
  "frame",
  "frameset",
  "object",
  "embed",
  "applet",
  "portal",
  "xml",
  "import",
  "layer",
  "ilayer",
  "bgsound",
]);
/** Tags that change the page's behaviour, destination, parsing mode or structure. */
const ACTIVE_TAGS: ReadonlySet<string> = new Set([
  ...EMBED_TAGS,
  // Page metadata: base URL, refresh, charset, header equivalents, style sheets.
  "base",
  "meta",
  "link",
  // Forms capture what the user types and send it elsewhere.
  "form",
  "input",
  "button",
  "textarea",
  "select",
  "keygen",
  "isindex",
  // Document structure: a fragment never needs it.
  "html",
  "head",
  "body",
  // Parser mode switches: the rest of the page becomes text, CSS or foreign content.
  "style",
  "xmp",
  "plaintext",
  "noscript",
  "noembed",
  "noframes",
  "math",
  // SVG animation and XML Events rewrite attributes or bind handlers.
  "set",
  "animate",
  "animatemotion",
  "animatetransform",
  "handler",
  "listener",
  "feimage",
  "foreignobject",
]);
/** Elements whose content is raw text: closing one the value never opened escapes it. */
const RAW_TEXT: ReadonlySet<string> = new Set([
  "script",
  "style",
  "textarea",
  "title",
  "noscript",
  "xmp",
  "iframe",
  "noembed",
  "noframes",
  "template",
]);
/** A quoted attribute or a comment closed, then markup: the shape of a context breakout. */
const BREAKOUT = /["'`]\s*\/?>|-->|\]\]>/;
/** Legacy processing instructions that load behaviours, namespaces or XSL style sheets. */
const ACTIVE_PI = /<\?(?:import\b|xml:namespace\b|xml-stylesheet\b[^<>]*\bhref)/i;
/** A DTD that gives every element of a kind a default event handler. */
const ATTLIST_HANDLER = /<!ATTLIST\s[^<>]*?\son[a-z]{3,}\s+CDATA/i;
/** Attributes that only JSX source uses (`className`, `htmlFor`, `={expression}`). */
const JSX_ATTR = /^(?:classname|htmlfor|key|ref)$/;
/** Attributes whose value is fetched or navigated to, where a dangling quote leaks the page. */
const FETCHED_ATTRS: ReadonlySet<string> = new Set([
  "src",
  "href",
  "background",
  "action",
  "formaction",
  "poster",
  "data",
  "ping",
  "srcset",
  "codebase",
  "cite",
  "longdesc",
  "xlink:href",
]);

/** Markup inside a URL: the quote was left open to carry the page's own tags away. */
const SWALLOWED_TAG = /<\/?[a-z]/i;

type Hit = (rule: string, score: number, offset: number) => void;

/**
 * Judges the tags of a value as injected markup.
 *
 * @param text the decoded value
 * @param tags its tags, as lexed
 * @param hit receives each verdict
 * @param discount negative adjustment when the value is a whole document
 */
export function judgeInjection(
  text: string,
  tags: readonly HtmlTag[],
  hit: Hit,
  discount: number,
): void {
  if (isSource(text, tags)) return;
  const breakout = BREAKOUT.exec(text);
  let breakoutAt = breakout === null ? -1 : breakout.index;
  const opened = new Set<string>();
  for (const tag of tags) {
    if (tag.closing) {
      if (RAW_TEXT.has(tag.name) && !opened.has(tag.name)) {
        // Closing an element the value never opened escapes the page's own element.
        const rest = text.slice(0, tag.start) + text.slice(tag.end);
        hit("context_breakout", (rest.trim().length > 0 ? 70 : 60) + discount, tag.start);
        if (breakoutAt < 0 || tag.start < breakoutAt) breakoutAt = tag.start;
      }
      continue;
    }
    opened.add(tag.name);
    if (!tag.complete || !ACTIVE_TAGS.has(tag.name) || isComponent(text, tag)) continue;
    const after = breakoutAt >= 0 && breakoutAt < tag.start ? 10 : 0;
    hit("html_injection", (tag.attrs.length > 0 ? 70 : 60) + after + discount, tag.start);
  }
  if (text.includes("<?")) {
    const pi = ACTIVE_PI.exec(text);
    if (pi !== null) hit("processing_instruction", 75 + discount, pi.index);
  }
  if (text.includes("<!")) {
    const dtd = ATTLIST_HANDLER.exec(text);
    if (dtd !== null) hit("event_handler", 85, dtd.index);
  }
}

/**
 * Judges one attribute for injection shapes other than handlers and script URLs.
 *
 * @returns a rule name and score, or undefined
 */
export function judgeInjectedAttr(
  tag: HtmlTag,
  attr: HtmlAttr,
): { rule: string; score: number } | undefined {
  const { name, value } = attr;
  if (value === undefined) return undefined;
  if (FETCHED_ATTRS.has(name) && (attr.unterminated || SWALLOWED_TAG.test(value))) {
    // `background="//evil?` swallows the page up to the next quote into the URL it loads.
    return { rule: "dangling_markup", score: 75 };
  }
  if (name === "xlink:href" && !value.startsWith("#") && tag.name !== "use") {
    // SVG icons reference their own fragments; a link out of MathML or SVG is navigation.
    return { rule: "foreign_link", score: 70 };
  }
  if (name === "ev:event" || name === "ev:handler") return { rule: "xml_events", score: 75 };
  return undefined;
}

/** JSX and other component source posted to code sandboxes: markup as program text. */
function isSource(text: string, tags: readonly HtmlTag[]): boolean {
  for (const tag of tags) {
    if (isComponent(text, tag)) return true;
    for (const attr of tag.attrs) {
      if (JSX_ATTR.test(attr.name) || attr.value?.startsWith("{") === true) return true;
    }
  }
  return false;
}

/** `<Form>`, `<TextArea>`: a PascalCase name is a component, whatever it renders. */
function isComponent(text: string, tag: HtmlTag): boolean {
  const at = tag.start + (tag.closing ? 2 : 1);
  const first = text.charCodeAt(at);
  const second = text.charCodeAt(at + 1);
  return first >= 65 && first <= 90 && second >= 97 && second <= 122;
}
