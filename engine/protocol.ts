/**
 * Protocol enforcement, run before the detectors: request shapes that no conforming client
 * sends and that only serve to make two HTTP parsers disagree (request smuggling, Host
 * confusion, header injection, verb tampering).
 *
 * The check sees what the server's parser let through. Deno's HTTP/1.1 server already
 * refuses some shapes with 400 before any handler runs (Content-Length together with
 * Transfer-Encoding, two different Content-Lengths, a Transfer-Encoding other than a coding
 * list ending in `chunked`, a repeated Host, raw CR or NUL in a header value); HTTP/2 and
 * other connectors may be less strict, so the rules stay here too. Shapes that do get
 * through Deno: a coding list (`gzip, chunked`), a repeated identical Content-Length (joined
 * as `4, 4`), a malformed Host, a lower-case or absurd method.
 */
import type { AttackClass, Finding } from "./types.ts";
import { confidenceOf } from "./make_finding.ts";

/** HTTP methods: a token of upper-case letters (WebDAV and custom verbs included). */
const METHOD = /^[A-Z][A-Z_-]{0,23}$/;
/** Methods a reverse proxy never has a reason to forward: tracing and tunnelling. */
const REFUSED_METHODS: ReadonlySet<string> = new Set(["TRACE", "TRACK", "DEBUG", "CONNECT"]);
/** A host name or IPv4 address, or a bracketed IPv6 literal, with an optional port. */
const HOST =
  /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?|\[[0-9A-Fa-f:.]+(?:%[\w.-]+)?\])(?::\d{1,5})?$/;
const CONTENT_LENGTH = /^\d{1,16}$/;

/** A protocol rule: the class, score and id of its finding. */
interface ProtocolRule {
  readonly class: AttackClass;
  readonly score: number;
  readonly id: string;
}
const METHOD_INVALID: ProtocolRule = { class: "method", score: 90, id: "method.invalid" };
const METHOD_REFUSED: ProtocolRule = { class: "method", score: 90, id: "method.refused" };
const CONTROL_CHARACTER: ProtocolRule = {
  class: "header-injection",
  score: 95,
  id: "header.control_character",
};
const HOST_INVALID: ProtocolRule = { class: "host-header", score: 90, id: "host.invalid" };
const smugglingRule = (id: string): ProtocolRule => ({ class: "request-smuggling", score: 92, id });
const DUPLICATE_LENGTH = smugglingRule("protocol.duplicate_length");
const DUPLICATE_ENCODING = smugglingRule("protocol.duplicate_encoding");
const INVALID_LENGTH = smugglingRule("protocol.invalid_length");
const LENGTH_AND_ENCODING = smugglingRule("protocol.length_and_encoding");
const OBFUSCATED_ENCODING = smugglingRule("protocol.obfuscated_encoding");
/**
 * The last Host value {@link HOST} accepted: a site's clients send the same few hosts, so the
 * pattern runs once per change of host instead of once per request.
 */
let lastValidHost: string | undefined;

function validHost(value: string): boolean {
  if (!HOST.test(value)) return false;
  lastValidHost = value;
  return true;
}

/**
 * Checks the request line and the header list.
 *
 * @param method the request method as received
 * @param headers header names lower-case, values as received
 * @returns the first violation, or undefined
 */
export function checkProtocol(
  method: string,
  headers: ReadonlyArray<readonly [string, string]>,
): Finding | undefined {
  if (method !== "GET" && method !== "POST") {
    if (!METHOD.test(method)) {
      return finding(METHOD_INVALID, "method", method);
    }
    if (REFUSED_METHODS.has(method)) {
      return finding(METHOD_REFUSED, "method", method);
    }
  }
  let contentLength: string | undefined;
  let transferEncoding: string | undefined;
  let hosts = 0;
  for (let i = 0; i < headers.length; i++) {
    const [name, value] = headers[i]!;
    // Header names need no check: every HTTP parser refuses an invalid one. A CR, LF or NUL
    // in a value ends the header for some parser down the line (three memchr-fast scans).
    if (value.indexOf("\r") >= 0 || value.indexOf("\n") >= 0 || value.indexOf("\0") >= 0) {
      return finding(CONTROL_CHARACTER, `header:${name}`, value);
    }
    if (name === "content-length") {
      if (contentLength !== undefined) {
        return smuggling(DUPLICATE_LENGTH, "content-length", value);
      }
      contentLength = value;
    } else if (name === "transfer-encoding") {
      if (transferEncoding !== undefined) {
        return smuggling(DUPLICATE_ENCODING, "transfer-encoding", value);
      }
      transferEncoding = value;
    } else if (name === "host" || name === ":authority") {
      hosts++;
      if (hosts > 1 || (value !== lastValidHost && !validHost(value))) {
        return finding(HOST_INVALID, `header:${name}`, value);
      }
    }
  }
  if (contentLength !== undefined && !CONTENT_LENGTH.test(contentLength)) {
    // Deno joins repeated headers: `4, 4` is two Content-Length fields.
    return smuggling(INVALID_LENGTH, "content-length", contentLength);
  }
  if (transferEncoding !== undefined) {
    if (contentLength !== undefined) {
      return smuggling(
        LENGTH_AND_ENCODING,
        "transfer-encoding",
        `${contentLength} / ${transferEncoding}`,
      );
    }
    if (transferEncoding.trim().toLowerCase() !== "chunked") {
      return smuggling(OBFUSCATED_ENCODING, "transfer-encoding", transferEncoding);
    }
  }
  return undefined;
}

function smuggling(rule: ProtocolRule, header: string, evidence: string): Finding {
  return finding(rule, `header:${header}`, evidence);
}

function finding(rule: ProtocolRule, location: string, evidence: string): Finding {
  return {
    class: rule.class,
    confidence: confidenceOf(rule.score),
    score: rule.score,
    location,
    evidence: evidence.slice(0, 120),
    ruleId: rule.id,
  };
}
