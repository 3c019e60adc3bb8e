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
import { type HtmlTag, lexHtml } from "./html_lexer.ts";
import { makeFinding } from "./make_finding.ts";
import { analyzeJs, domAccess } from "./js_context.ts";
import { judgeEncoding, otherReadings } from "./xss_encodings.ts";
import { cssText, SCRIPT_CSS } from "./css_injection.ts";
import { judgeInjection } from "./html_injection.ts";
import {
  type Hit,
  INERT_SCRIPT_URL,
  isDocument,
  judgeStyleBlock,
  judgeTag,
  SCRIPT_URL,
  URL_NOISE,
} from "./xss_tags.ts";
import { gated } from "./literal_gate.ts";

/**
 * A `javascript:` URL that calls something, inside other text (`?goto=javascript:alert(1)`,
 * `getURL("javascript:...")`); `javascript:void(0)` links are common in page snapshots.
 */
const SCRIPT_URL_CALL = gated(
  /(?:^|[\s=,;?&#"'`(:/\\>])(?:javascript|vbscript)\s*:(?!\s*(?:void\b|;|$))[^\n]{0,100}?[\w$\])]\s*[(`]/i,
);
const URL_PAYLOAD = /[(`=<\\]|base64/;
/**
 * A script string closed by the value, followed by an operator or `;`, then a call of a
 * script sink (`';alert(1)//`, `"-confirm(1)-"`). Sinks are named because arbitrary calls
 * (`"; foo(`) are common in code samples.
 */
const JS_BREAKOUT =
  /['"`][\s)}\]]*(?:[;,+\-*/|&^%=<>?:]|\binstanceof\b|\bin\b)[\s(!~+\-]*(?:alert|prompt|confirm|eval|Function|setTimeout|setInterval|fetch|import|atob|document\s*[.[]|window\s*[.[]|top\s*[.[]|self\s*[.[]|parent\s*[.[]|location\b|constructor\b|new\s+Image)\s*[([`=.]/;
/**
 * An event handler assigned a call of a script sink, wherever it stands: parsers and filters
 * disagree about junk around the name (`onerror/=`, `onerror[c]=`) and about where a tag
 * ends, but nothing benign writes `onerror=alert(`.
 */
const HANDLER_CALL = gated(
  /(?:^|[^\w$.-])on[a-z]{3,}[^\s=<>]{0,4}\s*=[^<>]{0,16}?\b(?:alert|prompt|confirm|eval|setTimeout|setInterval|Function|fetch|import)\s*[(`]/i,
);
/** A handler declared in a DTD (`<!ATTLIST img onerror CDATA "alert(1)">`), defaulted on every tag. */
const DTD_HANDLER =
  /\bon[a-z]{3,}\s+CDATA\s+["'][^"']{0,200}?\b(?:alert|prompt|confirm|eval|setTimeout|setInterval|Function|fetch|import)\s*[(`]/i;
/** JScript's ActiveX bridge (`new ActiveXObject('htmlfile').parentWindow.alert(1)`). */
const ACTIVEX =
  /\bnew\s+ActiveXObject\s*\(|\.parentWindow\s*\.\s*(?:alert|eval|execScript|location)\b/;
/**
 * A link target whose scheme or host is spelled to slip past filters: a tab or newline inside
 * the scheme (`htt\tp://`), percent-escapes in the host, or a second scheme inside the host.
 */
const OBFUSCATED_HREF =
  /^\s*(?:[a-z]+[\t\n\r]+[a-z]*:|https?:\/\/(?:[^/"'\s>]{0,253}%[0-9a-f]{2}|[^/"'\s>]{0,253}https?:\/\/))/i;

/** CDATA sections and comments that split a keyword: XML parsers join the pieces again. */
const SPLITTERS = /<!\[CDATA\[|\]\]>|<!--[^]{0,64}?-->/g;
/** A CSS declaration whose value is an IE expression or a binding. */
const CSS_DECLARATION_SCRIPT =
  /(?:^|[\s;{"'=])[a-z-]+\s*:\s*(?:expression\s*\(|url\s*\(\s*['"]?\s*javascript:)/;
/** What script-running CSS needs before escapes and comments are resolved. */
const CSS_HINT = gated(/\\|\/\*|expression|behavio|binding|javascript|@import/i);
/** A Netscape JavaScript entity (`&{alert(1)}`) assigned to an attribute. */
const SCRIPT_ENTITY = gated(/=\s*["'`]?&\{/);
/**
 * Script-running CSS cut off or bound: `x:url(javascript` (the scheme at the value's end),
 * Mozilla's `-moz-binding:url(...)` and IE's `behavior:url(...)`, which load script-carrying XML
 * or HTC files. A declaration, not the words in prose.
 */
const CSS_SCRIPT_URL =
  /(?:^|[\s;{"'=])[a-z-]+\s*:\s*url\s*\(\s*['"]?\s*(?:javascript|vbscript)\s*(?::|$)|(?:^|[\s;{"'])(?:-moz-binding|behaviou?r)\s*:\s*url\s*\(/i;
/**
 * An event-handler or navigation attribute written right after the value breaks out of an
 * unquoted or quoted attribute (`  onload=`, `'formaction=`): the value opens with the breakout
 * and nothing but the attribute follows the `=` for the page's own markup to complete.
 */
const ATTRIBUTE_START =
  /^(?:\s+|\s*["'`]\s*)(on(?:load|error|focus|blur|click|dblclick|mouse[a-z]{2,5}|key[a-z]{2,4}|pointer[a-z]{2,6}|toggle|begin|end|animation[a-z]{3,9}|transition[a-z]{3,6}|change|input|submit|resize|scroll|wheel|drag[a-z]{0,5}|drop|copy|cut|paste|contextmenu|show|pageshow|hashchange|message|popstate|unload|beforeunload|readystatechange|start|finish|bounce|select|search|invalid|auxclick)|formaction|srcdoc)\s*=/i;
const URL_CALL = gated(/url\s*\(/i);
const COMMENT_CLOSE_ONLY = /^\s*--!?>\s*$/;
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
  if (text.length < 4) {
    // A value that is nothing but `-->` probes whether it can end the comment it lands in.
    return COMMENT_CLOSE_ONLY.test(text)
      ? { rule: "xss.context_breakout", score: 50, offset: 0 }
      : undefined;
  }
  if (!XSS_SYNTAX.test(text)) return judgeBare(text);
  let best: XssVerdict | undefined;
  const hit = (rule: string, score: number, offset: number) => {
    if (best === undefined || score > best.score) best = { rule: `xss.${rule}`, score, offset };
  };
  judgeText(text, hit);
  if (text.includes("<!")) {
    // `<![CDATA[<]]>script<![CDATA[>]]>`, `javas<!-- -->cript:`: judge the joined reading too.
    const joined = text.replace(SPLITTERS, "");
    if (joined !== text) judgeText(joined, hit);
  }
  return best;
}

/**
 * A value without markup, quotes or calls can still be script: a DOM sink (`document.cookie`,
 * `window.location`) or an event handler added to an unquoted attribute (`  onload=`).
 */
function judgeBare(text: string): XssVerdict | undefined {
  if (text.includes("=")) {
    const attr = ATTRIBUTE_START.exec(text);
    if (attr !== null) return { rule: "xss.attribute_breakout", score: 70, offset: attr.index };
  }
  const dom = domAccess(text);
  return dom === undefined ? undefined : { rule: `xss.${dom.rule}`, score: dom.score, offset: 0 };
}

function judgeText(text: string, hit: Hit): void {
  if (text.includes("<")) {
    const tags = lexHtml(text);
    // Whole markup documents (editor content, page snapshots in telemetry) legitimately
    // contain scripts and embeds; only handlers and script URLs keep their weight there.
    const discount = isDocument(tags) ? -25 : 0;
    judgeInjection(text, tags, hit, discount);
    for (const tag of tags) {
      judgeTag(tag, hit, 0, tag.start, discount);
      if (tag.name === "a" && !tag.closing) judgeLink(tag, hit);
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
    // Only attributes with values can carry anything the tag judgement looks for.
    if (at < 0 || !text.includes("=", at)) continue;
    const [tag] = lexHtml(text.slice(at + 1), true, 1);
    if (tag !== undefined) judgeTag(tag, hit, -5, at);
  }
  const space = text.search(FIRST_SPACE);
  if (space >= 0 && text.includes("=")) {
    const [tag] = lexHtml(text.slice(space), true, 1);
    if (tag !== undefined) judgeTag(tag, hit, -10, space);
  }
  if (text.includes(":")) judgeUrl(text, hit);
  const js = JS_BREAKOUT.exec(text);
  if (js !== null) hit("script_breakout", 75, js.index);
  const code = analyzeJs(text);
  if (code !== undefined) hit(code.rule, code.score, 0);
  const paren = text.includes("(");
  // Both shapes are a declaration (`:`) whose value is a `url(`.
  if (paren && text.includes(":") && URL_CALL.test(text)) {
    const css = CSS_SCRIPT_URL.exec(text);
    if (css !== null) hit("css", 75, css.index);
  }
  if (text.includes("=")) {
    const attr = ATTRIBUTE_START.exec(text);
    if (attr !== null) hit("attribute_breakout", 70, attr.index);
  }
  if (paren && CSS_HINT.test(text)) {
    const css = cssText(text);
    // `xss:expression(...)` is a declaration, not the word "expression (" in prose.
    if (SCRIPT_CSS.test(css)) hit("css", CSS_DECLARATION_SCRIPT.test(css) ? 75 : 60, 0);
  }
  const entity = SCRIPT_ENTITY.exec(text);
  if (entity !== null) hit("script_entity", 70, entity.index);
  if (text.includes("=")) {
    const handler = HANDLER_CALL.exec(text);
    if (handler !== null) hit("event_handler", 80, handler.index);
  }
  if (text.includes("CDATA") || text.includes("cdata")) {
    const dtd = DTD_HANDLER.exec(text);
    if (dtd !== null) hit("event_handler", 80, dtd.index);
  }
  if (text.includes("ActiveX") || text.includes("parentWindow")) {
    const activex = ACTIVEX.exec(text);
    if (activex !== null) hit("activex", 80, activex.index);
  }
}

function judgeLink(tag: HtmlTag, hit: Hit): void {
  for (const attr of tag.attrs) {
    if (attr.name === "href" && attr.value !== undefined && OBFUSCATED_HREF.test(attr.value)) {
      hit("obfuscated_link", 75, tag.start);
    }
  }
}

/** A value that is itself a script URL (for href/src templates), or calls one inside text. */
function judgeUrl(text: string, hit: Hit): void {
  const scheme = SCRIPT_URL.test(urlHead(text));
  const url = scheme ? text.replace(URL_NOISE, "").toLowerCase() : "";
  // The rest must read as code or markup, so "javascript: the good parts" stays a search term.
  if (
    scheme && URL_PAYLOAD.test(url.slice(url.indexOf(":") + 1)) && !INERT_SCRIPT_URL.test(url)
  ) hit("url", 80, 0);
  else if (scheme && obfuscatedScheme(text)) {
    // `ja&Tab;vascript:`, `java\nscript:`: a scheme spelled around its filters is the attack,
    // whatever follows (the rest often arrives in another parameter).
    hit("url", 75, 0);
  } else {
    const call = SCRIPT_URL_CALL.exec(text);
    if (call !== null) hit("url", 75, call.index);
  }
}

/** More characters than the longest scheme {@link SCRIPT_URL} reads (`data:application/x-`). */
const URL_HEAD = 32;

/**
 * The start of the text as a URL parser reads it (`URL_NOISE` dropped, lower case), enough of
 * it for {@link SCRIPT_URL}, which is anchored at the start: the same answer as on the whole
 * text without copying and lower-casing a 16 KB window to read its first letters. (Lower case
 * maps no character outside ASCII to the ASCII letters the schemes spell, other than `İ` to
 * `i` followed by a combining dot, which no scheme has.)
 */
function urlHead(text: string): string {
  let head = "";
  for (let i = 0; i < text.length && head.length < URL_HEAD; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x20 && c !== 0x7f && c !== 0xfffd) head += text[i];
  }
  return head.toLowerCase();
}

/**
 * True when the value's script scheme has tabs or line breaks inside its letters
 * (`ja\tvascript:`), which browsers drop and filters do not.
 */
function obfuscatedScheme(text: string): boolean {
  const colon = text.indexOf(":");
  if (colon < 0 || colon > 48) return false;
  const lead = text.slice(0, colon).trimStart();
  // The URL parser drops tabs and line breaks anywhere in a URL, but a space ends the scheme.
  let scheme = "";
  for (let i = 0; i < lead.length; i++) {
    const c = lead.charCodeAt(i);
    if (c !== 9 && c !== 10 && c !== 13) scheme += lead[i];
  }
  scheme = scheme.toLowerCase();
  return (scheme === "javascript" || scheme === "vbscript") && lead.length !== scheme.length;
}

const ATTR_QUOTES = ['"', "'", "`"] as const;
const FIRST_SPACE = /\s/;

/**
 * Detector entry point: XSS in one decoded input.
 *
 * @param input the decoded input
 * @returns an `xss` finding or undefined
 *
 * @example
 * ```ts
 * import { type DetectorInput, extract, normalize, xss } from "./mod.ts";
 * const request = { method: "GET", path: "/", query: "q=<img src=x onerror=alert(1)>", headers: [] };
 * const input = extract(request).find((i) => i.source === "query")!;
 * const decoded: DetectorInput = {
 *   input,
 *   location: `query:${input.name}`,
 *   decoded: normalize(input.value).text,
 *   raw: input.value,
 * };
 * xss(decoded)?.ruleId; // "xss.event_handler"
 * ```
 */
export function xss(input: DetectorInput): Finding | undefined {
  let verdict = analyzeXss(input.decoded);
  for (const reading of otherReadings(input)) {
    const other = analyzeXss(reading);
    if (other !== undefined && (verdict === undefined || other.score > verdict.score)) {
      verdict = other;
    }
  }
  if (verdict === undefined) {
    const encoding = judgeEncoding(input);
    if (encoding === undefined) return undefined;
    verdict = { rule: `xss.${encoding.rule}`, score: encoding.score, offset: 0 };
  }
  // Evidence starts a little before the hit so the breakout that led there stays visible.
  const at = Math.max(0, verdict.offset - 10);
  return makeFinding(input, "xss", verdict.score, verdict.rule, input.decoded, at);
}

/** Dotted words that are a DOM sink by themselves. */
const DOM_WORD = /^(?:document\.(?:cookie|domain|location|write)|window\.location)$/i;

/**
 * XSS in a value of words and dots, which skips the detectors: `window.location` and
 * `document.cookie` as a whole value are script probes.
 *
 * @param input the input, its value made of word characters and dots
 * @returns an `xss.js_dom` finding or undefined
 */
export function xssWord(input: DetectorInput): Finding | undefined {
  const v = input.decoded;
  const c = v.charCodeAt(0) | 0x20;
  if (v.length > 20 || (c !== 100 && c !== 119) || !DOM_WORD.test(v)) return undefined;
  return makeFinding(input, "xss", 70, "xss.js_dom", v, 0);
}
