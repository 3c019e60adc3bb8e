/**
 * The own HTTP/1.1 server's request head parser, as strict as hyper (the server behind
 * `Deno.serve`): the request line, the field lines (read by the scanner both head parsers
 * share, `scanFieldLine`), Host, the body's framing and the connection's fate. A head it refuses
 * is a {@link BadRequest} (400, the connection closes).
 */
import {
  BAD_VALUE,
  FIELD,
  FieldLine,
  type HeaderPairs,
  scanFieldLine,
  stripCr,
  TCHAR,
  trimOws,
} from "./http1_head.ts";

/** Largest request head accepted (hyper's limit; 400 past it). */
export const MAX_HEAD_BYTES = 64 * 1024;
/** Most header lines in a request head (hyper's limit; 400 past it). */
export const MAX_HEADER_LINES = 128;

/** The part of a refused request the access-log record needs. */
export interface BrokenRequestHead {
  readonly method: string;
  readonly target: string;
  /** The head as received (latin1), for the Host and User-Agent of the record. */
  readonly head: string;
}

/** A parsed request head. */
export interface RequestHead {
  readonly method: string;
  readonly target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  readonly minor: number;
  /** Lower-case names, sorted, repeats joined as `Headers` joins them. */
  readonly headers: HeaderPairs;
  readonly host: string | undefined;
  /** -1: no Content-Length. */
  readonly contentLength: number;
  readonly chunked: boolean;
  readonly close: boolean;
  readonly expectContinue: boolean;
  /** Upgrade, HTTP/2 preface or CONNECT: not served here. */
  readonly handOver: boolean;
  readonly text: string;
}

/** A head this server refuses with 400. */
export class BadRequest extends Error {
  constructor(readonly reason: string, readonly request?: BrokenRequestHead) {
    super(reason);
  }
}

/**
 * The parts of a request line `method SP target SP HTTP/1.x`: the method, the target, the minor
 * version and whether the target has bytes above 0x7f; undefined when the line is not one. The
 * method is token characters; the target is visible ASCII but `#` (a fragment is never sent;
 * servers behind cut the path there differently), or bytes above 0x7f (UTF-8, checked by the
 * caller). Neither holds a space, so the first two spaces split the line. Scanned in place: this
 * runs for every request (what the pattern
 * `^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([\x21\x22\x24-\x7e\x80-\xff]+) HTTP\/1\.([01])$` accepts).
 */
export function requestLineParts(
  line: string,
): [method: string, target: string, minor: number, nonAscii: boolean] | undefined {
  const sp = line.indexOf(" ");
  if (sp <= 0) return undefined;
  for (let i = 0; i < sp; i++) {
    const c = line.charCodeAt(i);
    if (c > 127 || TCHAR[c] === 0) return undefined;
  }
  const sp2 = line.indexOf(" ", sp + 1);
  if (sp2 <= sp + 1 || line.length !== sp2 + 9 || !line.startsWith(" HTTP/1.", sp2)) {
    return undefined;
  }
  const version = line.charCodeAt(sp2 + 8);
  if (version !== 48 && version !== 49) return undefined;
  let nonAscii = false;
  for (let i = sp + 1; i < sp2; i++) {
    const c = line.charCodeAt(i);
    if (c >= 0x80 && c <= 0xff) nonAscii = true;
    else if (c < 0x21 || c === 0x23 || c > 0x7e) return undefined;
  }
  return [line.slice(0, sp), line.slice(sp + 1, sp2), version - 48, nonAscii];
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const DIGITS = /^\d+$/;
const ABSOLUTE = /^https?:\/\/([^/?#]+)/i;

/**
 * Parses the head `text` (request line to the empty line, terminator included; leading empty
 * lines already skipped); throws {@link BadRequest}.
 */
export function parseRequestHead(text: string): RequestHead {
  // The head ends with its empty line, so its line feeds are the request line's, one per header
  // line and the empty line's.
  const lf = text.indexOf("\n");
  let headerLines = -2;
  for (let at = lf; at >= 0; at = text.indexOf("\n", at + 1)) headerLines++;
  const requestLine = stripCr(text.slice(0, lf));
  if (requestLine === "PRI * HTTP/2.0") return preface(text);
  const m = requestLineParts(requestLine);
  if (m === undefined) throw invalidRequestLine(requestLine, text);
  const method = m[0];
  const minor = m[2];
  const broken: BrokenRequestHead = { method, target: m[1], head: text };
  if (requestLine.includes("\r")) throw new BadRequest("bare CR", broken);
  // Bytes above 0x7f in a target are accepted as UTF-8 only (as hyper does).
  let target = m[3] ? utf8Target(m[1], broken) : m[1];
  if (headerLines > MAX_HEADER_LINES) throw new BadRequest("too many header lines", broken);
  const f = readFields(text, lf + 1, headerLines, broken);
  if (f.hosts > 1) throw new BadRequest("more than one Host", broken);
  if (f.host === undefined) {
    if (minor === 1) throw new BadRequest("no Host", broken);
  } else if (!validAuthority(f.host)) throw new BadRequest("invalid Host", broken);
  const chunked = f.te !== undefined && chunkedLast(f, minor, broken);
  const absolute = target.charCodeAt(0) !== 47 && target !== "*";
  if (absolute && method !== "CONNECT") target = absoluteTarget(target, f.host, broken);
  return {
    method,
    target,
    minor,
    headers: joined(f.raw),
    host: f.host,
    contentLength: f.contentLength,
    chunked,
    close: closes(f.connection, minor),
    expectContinue: minor === 1 && f.expect.toLowerCase() === "100-continue",
    handOver: f.upgrade || method === "CONNECT" || method === "PRI",
    text,
  };
}

/** The refusal of a line that is no request line, with what looks like its method and target. */
function invalidRequestLine(requestLine: string, text: string): BadRequest {
  const sp = requestLine.indexOf(" ");
  const sp2 = requestLine.indexOf(" ", sp + 1);
  return new BadRequest("invalid request line", {
    method: sp < 0 ? "" : requestLine.slice(0, sp),
    target: sp < 0 ? "" : requestLine.slice(sp + 1, sp2 < 0 ? undefined : sp2),
    head: text,
  });
}

/** A target with bytes above 0x7f (latin1 code units) decoded as the UTF-8 it must be. */
function utf8Target(target: string, broken: BrokenRequestHead): string {
  try {
    return strictUtf8.decode(Uint8Array.from(target, (c) => c.charCodeAt(0)));
  } catch {
    throw new BadRequest("request target is not UTF-8", broken);
  }
}

/** What the field lines of one head said; one, reused for every head (parsing is synchronous). */
class HeadFields {
  raw: Array<[string, string]> = [];
  host: string | undefined = undefined;
  hosts = 0;
  contentLength = -1;
  te: string[] | undefined = undefined;
  connection = "";
  expect = "";
  upgrade = false;
}

const fields = new HeadFields();
/** The request parser's field line, reused for every line. */
const line = new FieldLine();

/** Reads the `count` field lines from `text[start]` into {@link fields}. */
function readFields(
  text: string,
  start: number,
  count: number,
  broken: BrokenRequestHead,
): HeadFields {
  const f = fields;
  f.raw = [];
  f.host = undefined;
  f.hosts = 0;
  f.contentLength = -1;
  f.te = undefined;
  f.connection = "";
  f.expect = "";
  f.upgrade = false;
  for (let n = 0; n < count; n++, start = line.lf + 1) {
    // Control bytes but tab (a bare CR included), and DEL, are refused in a value.
    const found = scanFieldLine(text, start, line, true);
    if (found !== FIELD) {
      const reason = found === BAD_VALUE ? "invalid header value" : "invalid header line";
      throw new BadRequest(reason, broken);
    }
    const name = line.name;
    const value = line.value;
    f.raw.push([name, value]);
    switch (name) {
      case "host":
        f.hosts++;
        f.host = value;
        break;
      case "content-length":
        f.contentLength = contentLength(value, f.contentLength, broken);
        break;
      case "transfer-encoding":
        (f.te ??= []).push(value);
        break;
      case "connection":
        f.connection = f.connection === "" ? value : `${f.connection}, ${value}`;
        break;
      case "expect":
        f.expect = value;
        break;
      case "upgrade":
        f.upgrade = true;
        break;
      case "transfer_encoding":
      case "content_length":
        // A server behind that reads `_` as `-` (CGI-style) would frame the body by it.
        throw new BadRequest("framing header name with an underscore", broken);
    }
  }
  return f;
}

/** A Content-Length value, which must agree with one read before (`before`, -1: none). */
function contentLength(value: string, before: number, broken: BrokenRequestHead): number {
  if (!DIGITS.test(value)) throw new BadRequest("invalid Content-Length", broken);
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new BadRequest("invalid Content-Length", broken);
  if (before !== -1 && before !== n) {
    throw new BadRequest("differing Content-Length values", broken);
  }
  return n;
}

/**
 * Whether the Transfer-Encoding the head has is `chunked` as the last coding, the only framing
 * accepted; throws for any other (and for one on HTTP/1.0 or beside Content-Length).
 */
function chunkedLast(f: HeadFields, minor: number, broken: BrokenRequestHead): boolean {
  if (minor === 0) throw new BadRequest("Transfer-Encoding on HTTP/1.0", broken);
  if (f.contentLength !== -1) {
    throw new BadRequest("Content-Length with Transfer-Encoding", broken);
  }
  let chunked = false;
  for (const v of f.te!) {
    for (const part of v.split(",")) {
      const coding = trimOws(part).toLowerCase();
      // Nothing may follow `chunked` (a second one included), and no empty element.
      if (coding === "" || chunked) throw new BadRequest("invalid Transfer-Encoding", broken);
      if (coding === "chunked") chunked = true;
    }
  }
  if (!chunked) throw new BadRequest("Transfer-Encoding without chunked last", broken);
  return true;
}

/** Whether the connection closes after this request (`connection`: the Connection values). */
function closes(connection: string, minor: number): boolean {
  let close = minor === 0;
  if (connection !== "") {
    for (const t of connection.split(",")) {
      const token = trimOws(t).toLowerCase();
      if (token === "close") close = true;
      else if (token === "keep-alive" && minor === 0) close = false;
    }
  }
  return close;
}

/**
 * An absolute-form target (`http://host/path`) checked against the Host: the site is chosen by
 * Host, so a target naming another host (or one that is not a host) is refused rather than
 * guessed at (RFC 9112 lets the target's win; servers differ).
 */
function absoluteTarget(
  target: string,
  host: string | undefined,
  broken: BrokenRequestHead,
): string {
  const m = ABSOLUTE.exec(target);
  if (m === null) throw new BadRequest("invalid request target", broken);
  const authority = m[1]!;
  if (!validAuthority(authority)) throw new BadRequest("invalid request target", broken);
  if (host !== undefined && host.toLowerCase() !== authority.toLowerCase()) {
    throw new BadRequest("Host differs from the request target", broken);
  }
  const at = emptyPathAt(target);
  return at < 0 ? target : `${target.slice(0, at)}/${target.slice(at)}`;
}

/**
 * Where an absolute-form target with an empty path before its query (`http://h?x=1`) needs the
 * `/` its path is (RFC 9112 §3.2.1); -1 for any other target. A URL parser splits such a target
 * at its first `/` after the authority, which would drop the query or take a `/` inside it as
 * the path's start (`http://h?x=/../admin` went upstream as `GET /../admin`).
 */
export function emptyPathAt(target: string): number {
  const m = ABSOLUTE.exec(target);
  return m !== null && target.charCodeAt(m[0].length) === 63 ? m[0].length : -1;
}

/** Characters of a reg-name (RFC 3986: unreserved, sub-delims, `%`), by code. */
const REG_NAME = new Uint8Array(128);
for (const c of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=%") {
  REG_NAME[c.charCodeAt(0)] = 1;
}

/**
 * A Host value (or an absolute-form target's authority): `uri-host [":" port]`, a reg-name or
 * an IP literal in brackets, port digits; empty is allowed (RFC 9112 §3.2). Everything else
 * (quotes, `/`, `@`, spaces, bytes above 0x7f) is refused: the host is copied into the
 * upstream's `Host`, `X-Forwarded-Host` and `Forwarded` headers.
 */
function validAuthority(h: string): boolean {
  const n = h.length;
  let i = 0;
  if (n > 0 && h.charCodeAt(0) === 91) {
    // [IPv6] or [v1.future]: hex digits, `:` and `.` (and the reg-name characters) inside.
    i = 1;
    while (i < n && h.charCodeAt(i) !== 93) {
      const c = h.charCodeAt(i);
      if (c > 127 || (REG_NAME[c] === 0 && c !== 58)) return false;
      i++;
    }
    if (i === n) return false;
    i++;
  } else {
    while (i < n) {
      const c = h.charCodeAt(i);
      if (c > 127 || REG_NAME[c] === 0) break;
      i++;
    }
  }
  if (i === n) return true;
  if (h.charCodeAt(i) !== 58) return false;
  for (i++; i < n; i++) {
    const c = h.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The HTTP/2 connection preface (prior knowledge, or ALPN h2 behind the TLS front). */
function preface(text: string): RequestHead {
  return {
    method: "PRI",
    target: "*",
    minor: 0,
    headers: [],
    host: undefined,
    contentLength: -1,
    chunked: false,
    close: true,
    expectContinue: false,
    handOver: true,
    text,
  };
}

const byName = (a: [string, string], b: [string, string]) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;

/** The pairs sorted by name, repeats joined (`, `; `; ` for Cookie), as `Headers` lists them. */
export function joined(raw: Array<[string, string]>): Array<[string, string]> {
  raw.sort(byName);
  let w = 0;
  for (let r = 0; r < raw.length; r++) {
    const pair = raw[r]!;
    if (w > 0 && raw[w - 1]![0] === pair[0]) {
      const prev = raw[w - 1]!;
      prev[1] = `${prev[1]}${pair[0] === "cookie" ? "; " : ", "}${pair[1]}`;
    } else raw[w++] = pair;
  }
  raw.length = w;
  return raw;
}
