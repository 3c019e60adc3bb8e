/**
 * CRLF / HTTP response splitting detector.
 *
 * A line break only splits a response when the value is copied into a header (a redirect
 * target, a cookie), and it only does harm when what follows is a header or a status line.
 * So the detector looks for a line break (decoded from any escape, including the
 * `%E5%98%8A` / `%E5%98%8D` code points that some stacks truncate to LF and CR) followed by
 * a header name an attacker would set. Terminal control sequences, the other way a value
 * rewrites what an operator reads in a log, are reported here too.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";
import { gated } from "./literal_gate.ts";

/** Line breaks, plus U+560A / U+560D whose low bytes are LF and CR. */
const BREAK = /[\r\n\u560a\u560d\u0085\u2028]/;
const INJECTED_HEADER =
  /[\r\n\u560a\u560d\u0085\u2028][^\r\n:]{0,3}?(?:set-cookie|location|content-type|content-length|content-security-policy|content-disposition|x-xss-protection|refresh|access-control-allow-[a-z]+|transfer-encoding|cache-control|x-forwarded-[a-z]+|host|cookie|link|x-frame-options|strict-transport-security)\s*:/i;
const SPLIT = gated(/[\r\n\u560a\u560d][^\r\n]{0,3}?(?:http\/\d\.\d\s+\d{3}|set-cookie\s*:)/i);
/**
 * A document start; {@link blankLineBefore} then looks back for the empty line that ends the
 * headers. Looking back from the rare tag (rather than forward from every line break) keeps a
 * text of nothing but line breaks linear.
 */
const BODY_START = /<(?:html|script|svg|body)/gi;

/**
 * A break still escaped after every decoding layer the normaliser applies (`%2525250a`). A
 * match only starts at the first break of a run, so a run of breaks is read once.
 */
const ESCAPED_BREAK =
  /(?<!%(?:25)*0[ad])%(?:25)*0[ad](?:%(?:25)*0[ad])*[^:\s]{0,3}?(?:set-cookie|location|content-type|content-length|refresh|x-xss-protection|http\/\d)/i;

const PATH_BREAK = /%(?:25)*0[ad]|%u000[ad]/i;

/**
 * A terminal control sequence (ECMA-48): CSI (`ESC [` or U+009B) with its parameter,
 * intermediate and final bytes, or OSC (`ESC ]`, window titles, hyperlinks, clipboard writes).
 * Logs and consoles that print a value replay it: cursor moves that hide lines, rewritten
 * titles, terminals that answer with keystrokes. No text a person types holds one; binary
 * data (mostly control and Latin-1 bytes) may hold the bytes by chance and is left alone, and
 * colour (SGR, `ESC[31m`) is what coloured tool output carries, so it does not count. In a body
 * (build logs, crash reports) a sequence only counts at `strict`.
 */
// deno-lint-ignore no-control-regex -- ESC and C1 CSI are what the rule looks for
const TERMINAL_ESCAPE = /(?:\x1b\[|\x9b)[0-9][0-?]*[ -/]*[@-ln-~]|\x1b\][0-9]+;/;
// deno-lint-ignore no-control-regex -- the introducers of terminal control sequences
const ESCAPE_INTRODUCER = /[\x1b\x9b]/;

/** Sources whose values legitimately hold multi-line text, such as a comment field. */
function isBody(source: string): boolean {
  return source === "json" || source === "form" || source === "multipart" || source === "xml" ||
    source === "body";
}

/**
 * Reports a line break followed by a header or a status line.
 *
 * @param value the decoded input
 * @returns the finding, class `crlf`
 */
export function crlf(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  if (value.input.source === "path" && PATH_BREAK.test(value.raw)) {
    // No client puts an escaped CR or LF into a request path; proxies may split on it.
    return makeFinding(value, "crlf", 75, "crlf.path_break", value.raw, 0);
  }
  if (ESCAPE_INTRODUCER.test(text)) {
    const escape = TERMINAL_ESCAPE.exec(text);
    if (escape !== null && !isBinary(text)) {
      // Build logs and crash reports posted as bodies carry progress bars (`ESC[2K`, `ESC[1A`).
      const score = isBody(value.input.source) ? 50 : 75;
      return makeFinding(value, "crlf", score, "crlf.terminal_escape", text, escape.index);
    }
  }
  if (!BREAK.test(text)) {
    const escaped = text.indexOf("%") >= 0 ? ESCAPED_BREAK.exec(text) : null;
    return escaped === null
      ? undefined
      : makeFinding(value, "crlf", 90, "crlf.escaped_break", text, escaped.index);
  }
  const split = SPLIT.exec(text);
  if (split !== null) {
    return makeFinding(value, "crlf", 92, "crlf.response_splitting", text, split.index);
  }
  const body = injectedBody(text);
  if (body >= 0) return makeFinding(value, "crlf", 92, "crlf.response_splitting", text, body);
  const header = INJECTED_HEADER.exec(text);
  if (header === null) return undefined;
  // A comment may well say "Location: Berlin" on its own line; a redirect target may not.
  // Monitoring SDKs even post whole response header blocks as JSON text. A line break the
  // body spelled as a percent escape its own format does not use (`%0d%0a` in JSON, `%250d`
  // in a form) was written for a decoder further on, as in a parameter.
  // A share link's prefilled text (`?text=Party%0ADate: Friday%0ALocation: Town hall`) escapes
  // its breaks too: a Location or Content-Type counts when it holds what that header takes.
  const forged = escapedForLater(value) && FORGED_HEADER.test(text);
  const score = isBody(value.input.source) && !forged ? 30 : 90;
  return makeFinding(value, "crlf", score, "crlf.header_injection", text, header.index);
}

/**
 * More than a tenth of the text is control characters or Latin-1 bytes other than the ESC and
 * BEL that delimit control sequences: decoded binary data.
 */
/** {@link ESCAPED_BREAK} written once more (`%250d%250a`): what a form body decodes to `%0d%0a`. */
const DOUBLE_ESCAPED_BREAK =
  /(?<!%25(?:25)*0[ad])%25(?:25)*0[ad](?:%(?:25)*0[ad])*[^:\s]{0,3}?(?:set-cookie|location|content-type|content-length|refresh|x-xss-protection|http\/\d)/i;

/**
 * A header line as a decoder further on would emit it: names prose does not write, or a
 * `Location` holding a URL or path and a `Content-Type` holding a media type (`Location: Berlin`
 * is an address in an event's text).
 */
const FORGED_HEADER =
  /[\r\n\u560a\u560d\u0085\u2028][^\r\n:]{0,3}?(?:set-cookie|content-length|refresh|x-xss-protection|http\/\d|location[ \t]*:[ \t]*(?:[a-z][a-z0-9+.-]*:|[/\\])|content-type[ \t]*:[ \t]*[a-z]+\/[\w.+-])/i;

/** Whether a body value's line break came from a percent escape its own format would not hold. */
function escapedForLater(value: DetectorInput): boolean {
  const raw = value.raw;
  if (raw.indexOf("%") < 0) return false;
  return (value.input.source === "form" ? DOUBLE_ESCAPED_BREAK : ESCAPED_BREAK).test(raw);
}

function isBinary(text: string): boolean {
  let odd = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x1b || c === 7) continue;
    if ((c < 0x20 && c !== 9 && c !== 10 && c !== 13) || (c >= 0x7f && c <= 0xff) || c === 0xfffd) {
      odd++;
    }
  }
  return odd * 10 > text.length;
}

/** Where a document starts after an empty line (headers ended, body injected), or -1. */
function injectedBody(text: string): number {
  if (text.indexOf("<") < 0) return -1;
  BODY_START.lastIndex = 0;
  for (let m = BODY_START.exec(text); m !== null; m = BODY_START.exec(text)) {
    const at = blankLineBefore(text, m.index);
    if (at >= 0) return at;
  }
  return -1;
}

/** The start of the whitespace before `at` when it holds two line feeds, or -1. */
function blankLineBefore(text: string, at: number): number {
  let feeds = 0;
  let i = at - 1;
  for (; i >= 0; i--) {
    const c = text.charCodeAt(i);
    if (c === 10) feeds++;
    else if (c !== 13 && c !== 32 && c !== 9) break;
  }
  return feeds >= 2 ? i + 1 : -1;
}
