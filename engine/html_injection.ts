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
 * `</textarea>`) makes it more so. Without attributes it is one when the value is nothing but
 * markup (`<head>`, `</form>`): prose may name a tag ("put it in the <head>"), a value made of
 * the tag alone is written for a parser.
 *
 * What XML parsing contexts (XHTML pages, XSLT, SOAP echoes) read is judged too: elements
 * qualified with the XHTML, SVG, MathML or XSL prefix (`<svg:svg>`, `</xsl:template>`), a
 * namespace declaration that brings one of those vocabularies into another element, DTD
 * declarations and an XML declaration in the middle of a value. Fragment editors and icon
 * telemetry write unprefixed `<svg xmlns="...">` roots, which stay allowed; a run that closes
 * every context at once (`"'\`-->]]>`) is a breakout probe wherever it stands.
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
/**
 * Two different quotes and a comment or CDATA end within a few characters: a probe that closes
 * every context a value could land in (`["'\`-->]]>]`), which no text or code needs.
 */
const POLYGLOT_CLOSE = /(["'`])[^"'`\n]{0,3}(?!\1)["'`][^\n]{0,8}?(?:-->|\]\]>)/;
/** Roots of foreign content, and elements that only a document has: closing one escapes the page's. */
const FOREIGN_ROOTS: ReadonlySet<string> = new Set(["svg", "math"]);
/** Namespace prefixes of vocabularies that render or run: XHTML, SVG, MathML, XSLT. */
const ACTIVE_PREFIXES: ReadonlySet<string> = new Set([
  "html",
  "xhtml",
  "svg",
  "math",
  "xsl",
]);
/**
 * Namespace names of the XHTML, MathML and XSLT vocabularies (and SVG's, declared on anything
 * but an `<svg>` root): declaring one turns the element's content into active markup.
 */
const ACTIVE_NAMESPACE =
  /^\s*https?:\/\/www\.w3\.org\/(?:1999\/xhtml|1998\/math\/mathml|1999\/xsl\/transform|tr\/wd-xsl|2000\/svg)/i;
/** A DTD declaration (an internal subset or an attribute-list default) inside a value. */
const DTD_DECLARATION = /<!DOCTYPE\s+[\w.:-]+\s*\[|<!ATTLIST\s+[\w.:-]+/i;
/** An XML declaration; after other content it is a second document injected into the value. */
const XML_DECLARATION = /<\?xml\s+version/i;
const NOT_SPACE = /\S/;
/** At most this many words outside the tags for a value to count as nothing but markup. */
const MARKUP_ONLY_WORDS = 2;
/** Legacy processing instructions that load behaviours, namespaces or XSL style sheets. */
const ACTIVE_PI = /<\?(?:import\b|xml:namespace\b|xml-stylesheet\b[^<>]*\bhref)|<xml:namespace\b/i;
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
  let bare: boolean | undefined;
  const markupOnly = () => bare ??= isMarkupOnly(text, tags);
  /** The first `<svg>` or `<math>` root still open, and how many are. */
  let foreignAt = -1;
  let foreignDepth = 0;
  for (const tag of tags) {
    const foreign = FOREIGN_ROOTS.has(tag.name) && tag.prefix === "";
    const active = ACTIVE_TAGS.has(tag.name) || foreign;
    if (foreign) {
      if (!tag.closing && foreignDepth++ === 0) foreignAt = tag.start;
      else if (tag.closing && foreignDepth > 0 && --foreignDepth === 0) foreignAt = -1;
    }
    if (tag.closing) {
      if (opened.has(tag.name)) continue;
      if (RAW_TEXT.has(tag.name)) {
        // Closing an element the value never opened escapes the page's own element.
        hit("context_breakout", 70 + discount, tag.start);
        if (breakoutAt < 0 || tag.start < breakoutAt) breakoutAt = tag.start;
      } else if (
        tag.complete && (active || ACTIVE_PREFIXES.has(tag.prefix)) && markupOnly()
      ) {
        hit("context_breakout", 70 + discount, tag.start);
      }
      continue;
    }
    opened.add(tag.name);
    if (isComponent(text, tag)) continue;
    for (const attr of tag.attrs) {
      if (SCHEMA_LOCATION.has(attr.name) && attr.value !== undefined && REMOTE.test(attr.value)) {
        // `xsi:schemaLocation="... http://host/x.xsd"`: a validating parser fetches the schema.
        hit("namespace", 70 + discount, tag.start);
      }
      // The page supplies the `>` of a tag the value leaves open; the declaration is whole.
      if (
        (attr.name === "xmlns" || attr.name.startsWith("xmlns:")) && attr.value !== undefined &&
        !attr.unterminated && ACTIVE_NAMESPACE.test(attr.value) &&
        !(tag.name === "svg" && attr.value.toLowerCase().includes("/svg"))
      ) hit("namespace", 70 + discount, tag.start);
    }
    if (!tag.complete) {
      // `<meta http-equiv="refresh"`, `<base href=`: the page's next `>` completes the tag.
      if (ACTIVE_TAGS.has(tag.name) && tag === tags[tags.length - 1] && dangerousOpen(tag)) {
        hit("html_injection", 70 + discount, tag.start);
      }
      continue;
    }
    if (tag.name === "vmlframe") {
      // VML's frame loads another document into the page (IE's `<v:vmlframe src=...>`).
      hit("embed", 75 + discount, tag.start);
      continue;
    }
    if (ACTIVE_PREFIXES.has(tag.prefix)) {
      // `<svg:svg>`, `<xsl:template>`: markup for an XML parser, never an HTML fragment's.
      hit("namespaced_markup", 70 + discount, tag.start);
      continue;
    }
    if (!ACTIVE_TAGS.has(tag.name)) continue;
    const after = breakoutAt >= 0 && breakoutAt < tag.start ? 10 : 0;
    const shape = tag.attrs.length > 0 || markupOnly() ? 70 : 60;
    hit("html_injection", shape + after + discount, tag.start);
  }
  if (foreignAt >= 0 && markupOnly()) {
    // An `<svg>` or `<math>` root left open turns the rest of the page into foreign content,
    // where `<style>` and comments parse differently (the ground of mutation XSS); icons close
    // their root.
    hit("foreign_content", 70 + discount, foreignAt);
  }
  // IE read `<?xml:namespace ...>` and `<xml:namespace ...>` alike, as an instruction or a tag.
  const pi = ACTIVE_PI.exec(text);
  if (pi !== null) hit("processing_instruction", 75 + discount, pi.index);
  if (text.includes("<?")) {
    const xml = XML_DECLARATION.exec(text);
    if (xml !== null && NOT_SPACE.test(text.slice(0, xml.index))) {
      hit("xml_declaration", 70 + discount, xml.index);
    }
  }
  if (text.includes("<!")) {
    const dtd = ATTLIST_HANDLER.exec(text);
    if (dtd !== null) hit("event_handler", 85, dtd.index);
    const declaration = DTD_DECLARATION.exec(text);
    if (declaration !== null) hit("dtd", 70 + discount, declaration.index);
    // A comment opened and never closed swallows the page after the value.
    const open = text.lastIndexOf("<!--");
    if (open >= 0 && text.indexOf("-->", open + 4) < 0 && markupOnly()) {
      hit("dangling_comment", 70 + discount, open);
    }
  }
  if (breakout !== null) {
    const probe = POLYGLOT_CLOSE.exec(text);
    if (probe !== null) hit("context_breakout", 75, probe.index);
  }
}

/** Schema hints an XML parser may fetch. */
const SCHEMA_LOCATION: ReadonlySet<string> = new Set([
  "xsi:schemalocation",
  "xsi:nonamespaceschemalocation",
]);
const REMOTE = /(?:^|\s)(?:https?|ftp):\/\//i;
/** The attribute of each active tag that makes it act (redirect, re-base, load, submit). */
const ACTING_ATTRS: Readonly<Record<string, ReadonlySet<string>>> = {
  meta: new Set(["http-equiv", "content", "charset"]),
  base: new Set(["href", "target"]),
  link: new Set(["href", "rel", "import"]),
  object: new Set(["data", "classid", "codebase", "type"]),
  embed: new Set(["src", "code", "type"]),
  applet: new Set(["code", "codebase", "archive"]),
  iframe: new Set(["src", "srcdoc"]),
  frame: new Set(["src"]),
  form: new Set(["action"]),
  button: new Set(["formaction"]),
  input: new Set(["formaction", "src"]),
  import: new Set(["implementation"]),
};

/** An unfinished active tag that already names the attribute that makes it act. */
function dangerousOpen(tag: HtmlTag): boolean {
  const acting = ACTING_ATTRS[tag.name];
  return acting !== undefined && tag.attrs.some((a) => acting.has(a.name));
}

/**
 * True when the value is markup and little else: at most {@link MARKUP_ONLY_WORDS} words of
 * two or more letters outside its tags.
 */
function isMarkupOnly(text: string, tags: readonly HtmlTag[]): boolean {
  let words = 0;
  let at = 0;
  for (const tag of tags) {
    words += countWords(text, at, tag.start, MARKUP_ONLY_WORDS - words + 1);
    if (words > MARKUP_ONLY_WORDS) return false;
    if (tag.end > at) at = tag.end;
  }
  return words + countWords(text, at, text.length, MARKUP_ONLY_WORDS - words + 1) <=
    MARKUP_ONLY_WORDS;
}

/** Words of two or more letters in `text[from, to)`, counting at most `limit`. */
function countWords(text: string, from: number, to: number, limit: number): number {
  let words = 0;
  let run = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i) | 0x20;
    if ((c >= 97 && c <= 122) || text.charCodeAt(i) > 0x7f) run++;
    else {
      if (run >= 2 && ++words >= limit) return words;
      run = 0;
    }
  }
  return run >= 2 ? words + 1 : words;
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
