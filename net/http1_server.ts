/**
 * The data listener's own HTTP/1.1 server: the connection front (`conn_front.ts`) reads the
 * client's requests itself, calls the data-plane app with each, and writes its answers back on
 * the same connection, instead of piping every byte over loopback into `Deno.serve` (that hop
 * cost a fifth of the throughput; docs/data-plane.md, "Connection limits").
 *
 * It parses as strictly as hyper, the server behind `Deno.serve`, and answers the same way
 * (measured side by side: `scripts/http1_probe.ts`, `tests/net/http1_server_test.ts`):
 * token methods and header names, request targets of visible ASCII, no obsolete line folding,
 * no bare CR, no control bytes in values, one Host, at most 128 header lines and 64 KiB of
 * head, Content-Length digits only (repeats must agree), Transfer-Encoding only with `chunked`
 * last (and never with Content-Length, nor on HTTP/1.0), chunked framing as `http1_framing.ts`
 * checks it. Anything else is a 400 and the connection closes.
 *
 * What it does not serve, it hands back to the front (`handOver`) at a request boundary, with
 * the bytes already read: upgrades (WebSocket, h2c), the HTTP/2 preface and CONNECT, which keep
 * going to `Deno.serve` through the loopback pipe.
 *
 * Requests are handled one at a time per connection (pipelined requests wait in the buffer),
 * bodies stream both ways (`Content-Length` or chunked; 100-continue sent when the handler
 * first reads a body the client holds back), HEAD, 1xx, 204 and 304 answers carry no body.
 */
import { ChunkedFraming } from "./http1_framing.ts";
import { type ConnRead, connReader } from "./conn_read.ts";
import { chunkFrame, concatChunks } from "./chunks.ts";
import {
  BAD_VALUE,
  FIELD,
  FieldLine,
  headEnd,
  latin1,
  scanFieldLine,
  stripCr,
  TCHAR,
  trimOws,
} from "./http1_head.ts";
import { DirectAnswer, HEADER_PAIRS } from "./direct_answer.ts";

/** Largest request head accepted (hyper's limit; 400 past it). */
export const MAX_HEAD_BYTES = 64 * 1024;
/** Most header lines in a request head (hyper's limit; 400 past it). */
export const MAX_HEADER_LINES = 128;
/** Request body left unread by the handler that is still read (and dropped) to keep the connection. */
const DRAIN_LIMIT = 64 * 1024;
const READ_BUFFER = 16 * 1024;
/** The largest answer head and body a connection keeps a write buffer for. */
const OUT_KEEP = 16 * 1024;
/** At most this many bytes an answer's stream already holds are taken before its head is written. */
const SMALL_BODY = 64 * 1024;
/** Lingering close: how long and how much of what a client still sends is read and dropped. */
const LINGER_MS = 2_000;
const LINGER_BYTES = 1024 * 1024;

/** What a connection needs from whoever runs it (the connection front). */
export interface Http1Host {
  /** The first bytes of a request head have arrived. */
  headStarted(): void;
  /** The handler is reading the body (a read from the client is pending) or not any more. */
  readingBody(pending: boolean): void;
  /** The request is complete; the handler works on it. */
  handling(): void;
  /** A write to the client is pending (true) or done (false). */
  sending(pending: boolean): void;
  /** The answer is complete; the connection waits for the next request. */
  idle(): void;
  /** The request's framing broke (bad chunked framing); it was answered 400. */
  badFraming(request: BrokenRequestHead, reason: string): void;
  /** The request head was refused with 400 (`reason`); for the record. */
  badRequest(request: BrokenRequestHead | undefined, reason: string): void;
  /**
   * A request this server does not serve (upgrade, HTTP/2 preface, CONNECT): the connection
   * goes on elsewhere, starting with `pending` (the bytes read and not yet consumed).
   */
  handOver(pending: Uint8Array): Promise<void>;
}

/** The part of a refused request the access-log record needs. */
export interface BrokenRequestHead {
  readonly method: string;
  readonly target: string;
  /** The head as received (latin1), for the Host and User-Agent of the record. */
  readonly head: string;
}

/**
 * Answers a request; the data plane's transaction may answer a proxied response with a
 * `DirectAnswer` (typed as a `Response` on its way through the app), which is written as it is.
 */
export type Http1Handler = (req: Request) => Response | Promise<Response>;

/**
 * The parts of a request line `method SP target SP HTTP/1.x`: the method, the target, the minor
 * version and whether the target has bytes above 0x7f; undefined when the line is not one. The
 * method is token characters; the target is visible ASCII but `#` (a fragment is never sent;
 * servers behind cut the path there differently), or bytes above 0x7f (UTF-8, checked by the
 * caller). Neither holds a space, so the first two spaces split the line. Scanned in place: this
 * runs for every request (it was the pattern
 * `^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([\x21\x22\x24-\x7e\x80-\xff]+) HTTP\/1\.([01])$`).
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

const utf8 = new TextEncoder();

/** A parsed request head. */
export interface RequestHead {
  readonly method: string;
  readonly target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  readonly minor: number;
  /** Lower-case names, sorted, repeats joined as `Headers` joins them. */
  readonly headers: Array<[string, string]>;
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

/** The request parser's field line, reused for every line (parsing is synchronous). */
const line = new FieldLine();

/**
 * Parses the head `text` (request line to the empty line, terminator included; leading empty
 * lines already skipped); throws {@link BadRequest}.
 */
export function parseRequestHead(text: string): RequestHead {
  // The lines are walked in place (no array of lines, no regular expression per header line):
  // this runs for every request. The head ends with its empty line, so its line feeds are the
  // request line's, one per header line and the empty line's.
  const lf = text.indexOf("\n");
  let headerLines = -2;
  for (let at = lf; at >= 0; at = text.indexOf("\n", at + 1)) headerLines++;
  const requestLine = stripCr(text.slice(0, lf));
  if (requestLine === "PRI * HTTP/2.0") return preface(text);
  const m = requestLineParts(requestLine);
  if (m === undefined) {
    const sp = requestLine.indexOf(" ");
    const sp2 = requestLine.indexOf(" ", sp + 1);
    throw new BadRequest("invalid request line", {
      method: sp < 0 ? "" : requestLine.slice(0, sp),
      target: sp < 0 ? "" : requestLine.slice(sp + 1, sp2 < 0 ? undefined : sp2),
      head: text,
    });
  }
  const method = m[0];
  let target = m[1];
  const minor = m[2];
  const broken = { method, target, head: text };
  if (requestLine.includes("\r")) throw new BadRequest("bare CR", broken);
  if (m[3]) {
    // Bytes above 0x7f in a target are accepted as UTF-8 only (as hyper does).
    try {
      target = strictUtf8.decode(Uint8Array.from(target, (c) => c.charCodeAt(0)));
    } catch {
      throw new BadRequest("request target is not UTF-8", broken);
    }
  }
  if (headerLines > MAX_HEADER_LINES) throw new BadRequest("too many header lines", broken);
  const raw: Array<[string, string]> = [];
  let host: string | undefined;
  let hosts = 0;
  let contentLength = -1;
  let te: string[] | undefined;
  let connection = "";
  let expect = "";
  let upgrade = false;
  for (let n = 0, start = lf + 1; n < headerLines; n++, start = line.lf + 1) {
    // Control bytes but tab (a bare CR included), and DEL, are refused in a value.
    const found = scanFieldLine(text, start, line, true);
    if (found !== FIELD) {
      const reason = found === BAD_VALUE ? "invalid header value" : "invalid header line";
      throw new BadRequest(reason, broken);
    }
    const name = line.name;
    const value = line.value;
    raw.push([name, value]);
    switch (name) {
      case "host":
        hosts++;
        host = value;
        break;
      case "content-length": {
        if (!DIGITS.test(value)) throw new BadRequest("invalid Content-Length", broken);
        const n = Number(value);
        if (!Number.isSafeInteger(n)) throw new BadRequest("invalid Content-Length", broken);
        if (contentLength !== -1 && contentLength !== n) {
          throw new BadRequest("differing Content-Length values", broken);
        }
        contentLength = n;
        break;
      }
      case "transfer-encoding":
        (te ??= []).push(value);
        break;
      case "connection":
        connection = connection === "" ? value : `${connection}, ${value}`;
        break;
      case "expect":
        expect = value;
        break;
      case "upgrade":
        upgrade = true;
        break;
      case "transfer_encoding":
      case "content_length":
        // A server behind that reads `_` as `-` (CGI-style) would frame the body by it.
        throw new BadRequest("framing header name with an underscore", broken);
    }
  }
  if (hosts > 1) throw new BadRequest("more than one Host", broken);
  if (host === undefined) {
    if (minor === 1) throw new BadRequest("no Host", broken);
  } else if (!validAuthority(host)) throw new BadRequest("invalid Host", broken);
  let chunked = false;
  if (te !== undefined) {
    if (minor === 0) throw new BadRequest("Transfer-Encoding on HTTP/1.0", broken);
    if (contentLength !== -1) {
      throw new BadRequest("Content-Length with Transfer-Encoding", broken);
    }
    for (const v of te) {
      for (const part of v.split(",")) {
        const coding = trimOws(part).toLowerCase();
        // Nothing may follow `chunked` (a second one included), and no empty element.
        if (coding === "" || chunked) throw new BadRequest("invalid Transfer-Encoding", broken);
        if (coding === "chunked") chunked = true;
      }
    }
    if (!chunked) throw new BadRequest("Transfer-Encoding without chunked last", broken);
  }
  let close = minor === 0;
  if (connection !== "") {
    for (const t of connection.split(",")) {
      const token = trimOws(t).toLowerCase();
      if (token === "close") close = true;
      else if (token === "keep-alive" && minor === 0) close = false;
    }
  }
  const absolute = target.charCodeAt(0) !== 47 && target !== "*";
  if (absolute && method !== "CONNECT") {
    const m = ABSOLUTE.exec(target);
    if (m === null) throw new BadRequest("invalid request target", broken);
    // The site is chosen by Host: a target naming another host (or one that is not a host) is
    // refused rather than guessed at (RFC 9112 lets the target's win; servers differ).
    const authority = m[1]!;
    if (!validAuthority(authority)) throw new BadRequest("invalid request target", broken);
    if (host !== undefined && host.toLowerCase() !== authority.toLowerCase()) {
      throw new BadRequest("Host differs from the request target", broken);
    }
    // An empty path before a query (`http://h?x=1`) is `/` (RFC 9112 §3.2.1): the URL is split
    // at its first `/` after the authority, which would drop the query or take a `/` inside it
    // as the path's start (`http://h?x=/../admin` went upstream as `GET /../admin`).
    if (target.charCodeAt(m[0].length) === 63) {
      target = `${m[0]}/${target.slice(m[0].length)}`;
    }
  }
  return {
    method,
    target,
    minor,
    headers: joined(raw),
    host,
    contentLength,
    chunked,
    close,
    expectContinue: minor === 1 && expect.toLowerCase() === "100-continue",
    handOver: upgrade || method === "CONNECT" || method === "PRI",
    text,
  };
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
function joined(raw: Array<[string, string]>): Array<[string, string]> {
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

/**
 * The request's headers as `Headers` reads them (lower-case names, sorted, repeats joined), on
 * the parsed pairs: no copy, no validation again (the parser checked them).
 */
class PairHeaders {
  #pairs: Array<[string, string]>;
  constructor(pairs: Array<[string, string]>) {
    this.#pairs = pairs;
  }
  get(name: string): string | null {
    const key = name.toLowerCase();
    for (const p of this.#pairs) if (p[0] === key) return p[1];
    return null;
  }
  has(name: string): boolean {
    return this.get(name) !== null;
  }
  getSetCookie(): string[] {
    const v = this.get("set-cookie");
    return v === null ? [] : [v];
  }
  forEach(fn: (value: string, name: string, parent: Headers) => void, thisArg?: unknown): void {
    for (const p of this.#pairs) fn.call(thisArg, p[1], p[0], this as unknown as Headers);
  }
  set(name: string, value: string): void {
    this.delete(name);
    this.append(name, value);
  }
  append(name: string, value: string): void {
    const key = name.toLowerCase();
    const old = this.#pairs.find((p) => p[0] === key);
    if (old) old[1] = `${old[1]}, ${value}`;
    else this.#pairs = joined([...this.#pairs, [key, value]]);
  }
  delete(name: string): void {
    const key = name.toLowerCase();
    this.#pairs = this.#pairs.filter((p) => p[0] !== key);
  }
  *entries(): IterableIterator<[string, string]> {
    for (const p of this.#pairs) yield [p[0], p[1]];
  }
  *keys(): IterableIterator<string> {
    for (const p of this.#pairs) yield p[0];
  }
  *values(): IterableIterator<string> {
    for (const p of this.#pairs) yield p[1];
  }
  /** The pairs themselves (not a copy). */
  pairs(): Array<[string, string]> {
    return this.#pairs;
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

const NEVER = new AbortController().signal;
const EMPTY = new Uint8Array(0);

/**
 * A request as the data-plane app reads it: the `Request` surface on the parsed head, with the
 * URL as received (not normalised by the URL parser, as `Deno.serve` gives it) and the method
 * as sent (a `Request` would upper-case `get` and refuse `TRACE`, hiding them from the engine).
 */
class IncomingRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: PairHeaders;
  #source: BodySource | undefined;
  #stream: ReadableStream<Uint8Array> | undefined;
  #used = false;

  constructor(method: string, url: string, headers: PairHeaders, source: BodySource | undefined) {
    this.method = method;
    this.url = url;
    this.headers = headers;
    this.#source = source;
  }

  // The constant part of the `Request` surface lives on the prototype, not in every request.
  get signal(): AbortSignal {
    return NEVER;
  }
  get cache(): string {
    return "default";
  }
  get credentials(): string {
    return "same-origin";
  }
  get destination(): string {
    return "";
  }
  get integrity(): string {
    return "";
  }
  get keepalive(): boolean {
    return false;
  }
  get mode(): string {
    return "cors";
  }
  get redirect(): string {
    return "follow";
  }
  get referrer(): string {
    return "about:client";
  }
  get referrerPolicy(): string {
    return "";
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#source === undefined) return null;
    return this.#stream ??= this.#source.stream();
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    if (this.#used) throw new TypeError("Body already consumed");
    this.#used = true;
    const source = this.#source;
    if (source === undefined) return EMPTY;
    if (this.#stream === undefined) {
      const whole = source.whole();
      if (whole !== undefined) return whole;
    }
    return new Uint8Array(await new Response(this.body).arrayBuffer());
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.bytes()).slice().buffer;
  }

  async text(): Promise<string> {
    return new TextDecoder().decode(await this.bytes());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async blob(): Promise<Blob> {
    return new Blob([await this.bytes()], { type: this.headers.get("content-type") ?? "" });
  }

  async formData(): Promise<FormData> {
    const type = this.headers.get("content-type") ?? "";
    return await new Response(await this.bytes(), { headers: { "content-type": type } })
      .formData();
  }

  clone(): never {
    throw new TypeError("This request cannot be cloned");
  }

  /** The parsed pairs, for the transaction (direct_answer.ts): no copy of the headers. */
  get [HEADER_PAIRS](): Array<[string, string]> {
    return this.headers.pairs();
  }
}

/** The body of the request being read, from the connection. */
interface BodySource {
  /** The whole body when it is already in the buffer (no stream needed). */
  whole(): Uint8Array<ArrayBuffer> | undefined;
  stream(): ReadableStream<Uint8Array>;
}

/** Response status texts for the status line when the response has none. */
const REASONS: Record<number, string> = {
  100: "Continue",
  101: "Switching Protocols",
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  206: "Partial Content",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  413: "Content Too Large",
  421: "Misdirected Request",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

let dateSecond = 0;
let dateText = "";
/** The `date` header line, formatted once a second. */
function dateLine(): string {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateText = `date: ${new Date(now).toUTCString()}\r\n`;
  }
  return dateText;
}

const BAD_REQUEST = utf8.encode(
  "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
);
const BAD_FRAMING = utf8.encode(
  "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n" +
    "connection: close\r\ncontent-length: 36\r\n\r\nBad Request: invalid chunked framing",
);
const CONTINUE = utf8.encode("HTTP/1.1 100 Continue\r\n\r\n");
const NO_BODY = new Set([101, 204, 205, 304]);
/** Status codes as text, made once. */
const STATUS_TEXT: string[] = [];
for (let code = 100; code < 600; code++) STATUS_TEXT[code] = String(code);
/** Response headers the server writes itself (framing and connection management). */
const OWN = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "date"]);

/** A client connection served until it closes; resolves when it is done. */
export class Http1Connection {
  #conn: Deno.Conn;
  /** `#conn`'s reads, without the old-generation garbage of `conn.read` (net/conn_read.ts). */
  #readInto: ConnRead;
  #handler: Http1Handler;
  #host: Http1Host;
  #authority: string;
  #buf = new Uint8Array(READ_BUFFER);
  #start = 0;
  #end = 0;
  #eof = false;
  #closed = false;
  #out = new Uint8Array(2048);
  /** The buffer of the answer being built (`#out`, or one of its own when larger) and its end. */
  #build = this.#out;
  #at = 0;
  // The body of the request in progress.
  #remaining = 0;
  #chunked = false;
  #chunker = new ChunkedFraming();
  #bodyDone = true;
  #bodyError: Error | undefined;
  #continue = false;
  #head: RequestHead | undefined;
  #handedOver = false;
  /** Where the current request's head began in the buffer (for a hand-over). */
  #headStart = 0;
  /** The read in progress, if any (one at a time: the response may watch for a close). */
  #filling: Promise<boolean> | undefined;

  constructor(conn: Deno.Conn, handler: Http1Handler, host: Http1Host, authority: string) {
    this.#conn = conn;
    this.#readInto = connReader(conn);
    this.#handler = handler;
    this.#host = host;
    this.#authority = authority;
  }

  /** Serves requests until the connection ends; never throws. */
  async run(): Promise<void> {
    try {
      await this.#loop();
      if (!this.#handedOver) await this.#linger();
    } catch {
      // the connection broke; the front closes it
    }
  }

  /**
   * Closing with request bytes still unread would make the kernel reset the connection, and a
   * reset can destroy the answer before the client reads it (a 413 to a body still being
   * sent). So, like nginx's lingering close, the write side is shut first and what the client
   * still sends is read and dropped until it closes, for at most `LINGER_MS` and `LINGER_BYTES`.
   */
  async #linger(): Promise<void> {
    if (this.#eof || (this.#bodyDone && this.#start === this.#end)) return;
    try {
      await this.#conn.closeWrite();
    } catch {
      return;
    }
    const conn = this.#conn;
    const timer = setTimeout(() => {
      try {
        conn.close();
      } catch {
        // closed
      }
    }, LINGER_MS);
    try {
      const sink = new Uint8Array(READ_BUFFER);
      let total = 0;
      while (total < LINGER_BYTES) {
        const n = await conn.read(sink).catch(() => null);
        if (n === null) break;
        total += n;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  async #loop(): Promise<void> {
    while (!this.#closed) {
      const head = await this.#readHead();
      if (head === undefined) return;
      if (head.handOver) {
        this.#closed = true;
        this.#handedOver = true;
        await this.#host.handOver(this.#buf.slice(this.#headStart, this.#end));
        return;
      }
      this.#head = head;
      this.#remaining = head.contentLength;
      this.#chunked = head.chunked;
      const hasBody = head.chunked || head.contentLength > 0;
      this.#bodyDone = !hasBody;
      this.#bodyError = undefined;
      this.#continue = head.expectContinue && hasBody;
      if (head.chunked) {
        this.#chunker.reset();
        // Framing already broken in what arrived with the head: answered before the handler.
        if (!this.#checkBuffered()) return await this.#brokenFraming();
      }
      this.#host.handling();
      const url = head.target.charCodeAt(0) === 47 || head.target === "*"
        ? `http://${
          head.host === undefined || !validHost(head.host) ? this.#authority : head.host
        }${head.target === "*" ? "/*" : head.target}`
        : head.target;
      // GET and HEAD bodies are read and dropped, as `Deno.serve` does.
      const source = hasBody && head.method !== "GET" && head.method !== "HEAD"
        ? this.#source()
        : undefined;
      const req = new IncomingRequest(head.method, url, new PairHeaders(head.headers), source);
      let res: Response | DirectAnswer;
      try {
        res = await this.#handler(req as unknown as Request);
      } catch {
        res = new Response("Internal Server Error", { status: 500 });
      }
      if (this.#chunked && this.#chunker.reason !== undefined) {
        if (res instanceof DirectAnswer) res.discard();
        else await res.body?.cancel().catch(() => {});
        return await this.#brokenFraming();
      }
      const keep = await this.#respond(head, res);
      if (!keep) return;
      this.#host.idle();
    }
  }

  /** Reads until a whole head is buffered; undefined when the connection ended or was refused. */
  async #readHead(): Promise<RequestHead | undefined> {
    /** How many bytes after `#start` were searched for the head's end already. */
    let scanned = 0;
    let started = false;
    while (true) {
      // Empty lines before a request line are skipped (RFC 9112 §2.2).
      while (this.#start < this.#end) {
        const b = this.#buf[this.#start];
        if (b === 10) this.#start++;
        else if (b === 13 && this.#start + 1 < this.#end && this.#buf[this.#start + 1] === 10) {
          this.#start += 2;
        } else break;
        scanned = 0;
      }
      if (this.#start < this.#end) {
        if (!started) {
          started = true;
          this.#host.headStarted();
        }
        const end = headEnd(this.#buf, this.#start + Math.max(0, scanned - 3), this.#end);
        if (end >= 0) {
          if (end - this.#start > MAX_HEAD_BYTES) {
            return this.#refuse("head too large", this.#requestLine());
          }
          const text = latin1(this.#buf, this.#start, end);
          this.#headStart = this.#start;
          this.#start = end;
          try {
            return parseRequestHead(text);
          } catch (err) {
            const bad = err as BadRequest;
            return this.#refuse(bad.reason, bad.request);
          }
        }
        scanned = this.#end - this.#start;
        if (scanned > MAX_HEAD_BYTES) return this.#refuse("head too large", this.#requestLine());
      }
      if (this.#eof || !(await this.#fill())) return undefined;
    }
  }

  /** The request line of a head too large to parse, for its record (when it has one). */
  #requestLine(): BrokenRequestHead | undefined {
    const lf = this.#buf.subarray(this.#start, this.#end).indexOf(10);
    if (lf < 0 || lf > 8192) return undefined;
    const line = latin1(this.#buf, this.#start, this.#start + lf);
    const m = /^(\S+) (\S+) HTTP\/1\.[01]\r?$/.exec(line);
    if (m === null) return undefined;
    const headEnd = Math.min(this.#end, this.#start + 8192);
    return { method: m[1]!, target: m[2]!, head: latin1(this.#buf, this.#start, headEnd) };
  }

  async #refuse(reason: string, request?: BrokenRequestHead): Promise<undefined> {
    this.#host.badRequest(request, reason);
    await this.#write(BAD_REQUEST).catch(() => {});
    this.#closed = true;
    return undefined;
  }

  async #brokenFraming(): Promise<void> {
    const head = this.#head!;
    await this.#write(BAD_FRAMING).catch(() => {});
    this.#closed = true;
    this.#host.badFraming(
      { method: head.method, target: head.target, head: head.text },
      this.#chunker.reason ?? "invalid chunked framing",
    );
  }

  /** Reads more into the buffer (compacting or growing it); false at the end. */
  #fill(): Promise<boolean> {
    return this.#filling ??= this.#read();
  }

  async #read(): Promise<boolean> {
    if (this.#start === this.#end) {
      this.#start = 0;
      this.#end = 0;
      // A buffer grown for a large head goes back to its usual size once it is empty.
      if (this.#buf.length > READ_BUFFER) this.#buf = new Uint8Array(READ_BUFFER);
    } else if (this.#end === this.#buf.length) {
      if (this.#start > 0) {
        this.#buf.copyWithin(0, this.#start, this.#end);
        this.#end -= this.#start;
        this.#start = 0;
      } else {
        const grown = new Uint8Array(this.#buf.length * 2);
        grown.set(this.#buf);
        this.#buf = grown;
      }
    }
    let n: number | null;
    try {
      n = await this.#readInto(this.#buf.subarray(this.#end));
    } catch {
      n = null;
    }
    // Always after an await, so after `#fill` stored this read.
    this.#filling = undefined;
    if (n === null) {
      this.#eof = true;
      return false;
    }
    this.#end += n;
    return true;
  }

  /** Follows the chunked framing of what is buffered; false when it is already invalid. */
  #checkBuffered(): boolean {
    // A throwaway follower: the real decoding happens as the handler reads.
    const probe = new ChunkedFraming();
    if (probe.feed(this.#buf, this.#start, this.#end) < 0) {
      this.#chunker.reason = probe.reason;
      return false;
    }
    return true;
  }

  #source(): BodySource {
    return {
      whole: () => {
        if (this.#chunked || this.#end - this.#start < this.#remaining) return undefined;
        const bytes = this.#buf.slice(this.#start, this.#start + this.#remaining);
        this.#start += this.#remaining;
        this.#remaining = 0;
        this.#bodyDone = true;
        return bytes;
      },
      stream: () =>
        new ReadableStream<Uint8Array>({
          pull: async (controller) => {
            try {
              const chunk = await this.#readBody();
              if (chunk === null) controller.close();
              else controller.enqueue(chunk);
            } catch (err) {
              controller.error(err);
            }
          },
        }, { highWaterMark: 0 }),
    };
  }

  /** The next piece of the request body, or null at its end; throws when it broke off. */
  async #readBody(): Promise<Uint8Array | null> {
    while (true) {
      if (this.#bodyDone) return null;
      if (this.#bodyError) throw this.#bodyError;
      if (this.#start < this.#end) {
        if (!this.#chunked) {
          const take = Math.min(this.#remaining, this.#end - this.#start);
          const out = this.#buf.slice(this.#start, this.#start + take);
          this.#start += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#bodyDone = true;
          return out;
        }
        const ranges: number[] = [];
        const at = this.#chunker.feed(this.#buf, this.#start, this.#end, ranges);
        if (at < 0) {
          this.#bodyError = new Error(`invalid chunked framing: ${this.#chunker.reason}`);
          throw this.#bodyError;
        }
        let size = 0;
        for (let i = 0; i < ranges.length; i += 2) size += ranges[i + 1]! - ranges[i]!;
        let out: Uint8Array | undefined;
        if (size > 0) {
          out = new Uint8Array(size);
          let w = 0;
          for (let i = 0; i < ranges.length; i += 2) {
            out.set(this.#buf.subarray(ranges[i]!, ranges[i + 1]!), w);
            w += ranges[i + 1]! - ranges[i]!;
          }
        }
        this.#start = at;
        if (this.#chunker.done) this.#bodyDone = true;
        if (out !== undefined) return out;
        if (this.#bodyDone) return null;
      }
      if (this.#continue) {
        this.#continue = false;
        await this.#write(CONTINUE);
      }
      this.#host.readingBody(true);
      const more = this.#eof ? false : await this.#fill();
      this.#host.readingBody(false);
      if (!more) {
        this.#bodyError = new Error("the request body ended early");
        throw this.#bodyError;
      }
    }
  }

  /** Writes the answer; whether the connection can serve another request. */
  async #respond(head: RequestHead, res: Response | DirectAnswer): Promise<boolean> {
    const status = res.status;
    const bodyless = head.method === "HEAD" || NO_BODY.has(status) || status < 200;
    let close = head.close || this.#eof;
    // What the handler left of the request body is read and dropped when it is small;
    // otherwise the connection closes after the answer.
    if (!this.#bodyDone && !this.#bodyError) {
      // A client still waiting for its 100 (Continue) will not send the body.
      if (this.#chunked || this.#remaining > DRAIN_LIMIT || this.#continue) close = true;
    }
    if (this.#bodyError) close = true;
    // The head is written into the answer buffer piece by piece: no head string per answer.
    this.#build = this.#out;
    this.#at = 0;
    this.#put("HTTP/1.1 ");
    this.#put(STATUS_TEXT[status] ?? String(status));
    this.#put(" ");
    this.#put(res.statusText || REASONS[status] || "");
    this.#put("\r\n");
    let length = -1;
    let declared: string | undefined;
    if (res instanceof DirectAnswer) {
      // The upstream's field lines in its order, each on its own line (as nginx passes them).
      const pairs = res.headers;
      for (let i = 0; i < pairs.length; i++) {
        const pair = pairs[i]!;
        if (OWN.has(pair[0])) {
          if (pair[0] === "content-length") declared ??= pair[1];
        } else this.#field(pair[0], pair[1]);
      }
    } else {
      res.headers.forEach((v, k) => {
        if (OWN.has(k)) {
          if (k === "content-length") declared ??= v;
        } else this.#field(k, v);
      });
    }
    // A 204 never declares a length (RFC 9110 §8.6); a 205 is framed as empty below, never by
    // the length of content it must not carry: a client frames a 205 by its Content-Length.
    const hasLength = bodyless && status !== 204 && status !== 205 && declared !== undefined;
    if (hasLength) this.#field("content-length", declared!);
    else if (declared !== undefined) length = DIGITS.test(declared) ? Number(declared) : -1;
    this.#put(dateLine());
    const end = () => close ? CLOSE_END : head.minor === 0 ? KEEP_ALIVE_END : "\r\n";
    const body: Uint8Array | ReadableStream<Uint8Array> | null = bodyless ? null : res.body;
    if (body === null) {
      if (!bodyless || status === 205) this.#put("content-length: 0\r\n");
      else if (head.method === "HEAD" && !hasLength && res.body !== null) {
        // The length the GET would have had, when the body is already whole (as hyper does).
        const whole = res.body instanceof Uint8Array ? res.body.length : await heldLength(res.body);
        if (whole !== undefined) this.#field("content-length", String(whole));
      }
      this.#put(end());
      await this.#write(this.#built(undefined));
      if (bodyless) {
        if (res instanceof DirectAnswer) res.discard();
        else await res.body?.cancel().catch(() => {});
      }
      return this.#after(close);
    }
    if (body instanceof Uint8Array) {
      this.#field("content-length", String(body.length));
      this.#put(end());
      await this.#write(this.#built(body));
      return this.#after(close);
    }
    const reader = body.getReader();
    try {
      // What the stream already holds is taken without waiting for more input (an SSE feed's
      // next event may be minutes away): a body whole in it goes out with Content-Length in one
      // write, else the head and what is there go out at once and the rest as it comes.
      const held = await takeHeld(reader);
      if (held.done) {
        this.#field("content-length", String(held.total));
        this.#put(end());
        await this.#write(this.#built(concatChunks(held.parts, held.total)));
        return this.#after(close);
      }
      // A stream: with a declared length as it is, else chunked (close-delimited for HTTP/1.0).
      const chunked = length < 0 && head.minor === 1;
      if (length >= 0) this.#field("content-length", String(length));
      else if (chunked) this.#put("transfer-encoding: chunked\r\n");
      else close = true;
      this.#put(end());
      let sent = 0;
      let over = false;
      const frame = (chunk: Uint8Array) => {
        if (length >= 0 && sent + chunk.length > length) {
          // Never more than declared: the excess would read as the next answer.
          over = true;
          chunk = chunk.subarray(0, length - sent);
        }
        sent += chunk.length;
        return chunked ? chunkFrame(chunk) : chunk;
      };
      // While a stream is sent, a client that goes away cancels it (and so its upstream
      // connection), as `Deno.serve` does; a pipelined request read meanwhile stays buffered.
      let gone = false;
      if (this.#bodyDone && !this.#eof && this.#end - this.#start < READ_BUFFER) {
        this.#fill().then((more) => {
          if (!more) {
            gone = true;
            reader.cancel().catch(() => {});
          }
        });
      }
      const first = held.total > 0 ? frame(concatChunks(held.parts, held.total)) : undefined;
      await this.#write(this.#built(first));
      let pending = held.pending;
      while (!gone && !over) {
        const { done, value } = await (pending ?? reader.read());
        pending = undefined;
        if (done) break;
        if (value.length > 0) await this.#write(frame(value));
      }
      if (over) await reader.cancel().catch(() => {});
      if (gone || over) return false;
      if (chunked) await this.#write(LAST_CHUNK);
      // A body that did not match its declared length cannot keep the connection.
      if (length >= 0 && sent !== length) return false;
      return this.#after(close);
    } catch {
      await reader.cancel().catch(() => {});
      return false;
    }
  }

  /** After an answer: drops what is left of a small body; whether to go on. */
  #after(close: boolean): boolean | Promise<boolean> {
    if (close) return false;
    // Nearly always: nothing of the request body left, no promise needed.
    if (this.#bodyDone) return !this.#eof || this.#start < this.#end;
    return this.#drain();
  }

  /** Reads and drops the rest of a small request body; whether to go on. */
  async #drain(): Promise<boolean> {
    while (!this.#bodyDone) {
      try {
        if ((await this.#readBody()) === null) break;
      } catch {
        return false;
      }
    }
    return !this.#eof || this.#start < this.#end;
  }

  /**
   * Appends `s` to the answer being built: one byte per code unit (header values are bytes, kept
   * as latin1 code units). A code unit above 0xff, which neither `Headers` nor the upstream
   * parser lets through, is written as `?`, never cut to 8 bits (U+010A would become LF).
   */
  #put(s: string): void {
    const n = s.length;
    const at = this.#at;
    const out = this.#build.length - at < n ? this.#room(n) : this.#build;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      out[at + i] = c < 0x100 ? c : 0x3f;
    }
    this.#at = at + n;
  }

  /** Appends one field line. */
  #field(name: string, value: string): void {
    this.#put(name);
    this.#put(": ");
    this.#put(value);
    this.#put("\r\n");
  }

  /**
   * Room for `n` more bytes in the answer being built. The connection keeps a buffer for small
   * answers only; a larger one gets its own.
   */
  #room(n: number): Uint8Array {
    const need = this.#at + n;
    const size = Math.max(need, this.#build.length * 2);
    const grown = new Uint8Array(size <= OUT_KEEP ? OUT_KEEP : size);
    grown.set(this.#build.subarray(0, this.#at));
    if (grown.length <= OUT_KEEP) this.#out = grown;
    this.#build = grown;
    return grown;
  }

  /** The answer built, with `body` after the head. */
  #built(body: Uint8Array | undefined): Uint8Array {
    if (body !== undefined) {
      if (this.#build.length - this.#at < body.length) this.#room(body.length);
      this.#build.set(body, this.#at);
      this.#at += body.length;
    }
    return this.#build.subarray(0, this.#at);
  }

  async #write(data: Uint8Array): Promise<void> {
    this.#host.sending(true);
    try {
      // The socket nearly always takes the whole answer at once: no view of it for that write.
      let at = data.length > 0 ? await this.#conn.write(data) : 0;
      while (at < data.length) at += await this.#conn.write(data.subarray(at));
    } finally {
      this.#host.sending(false);
    }
  }
}

const LAST_CHUNK = utf8.encode("0\r\n\r\n");
const CLOSE_END = "connection: close\r\n\r\n";
/** An HTTP/1.0 client that asked to keep the connection is told it is kept. */
const KEEP_ALIVE_END = "connection: keep-alive\r\n\r\n";

/**
 * Microtask turns within which a read that needs no new input settles: a `Response`'s own stream
 * takes 2, one through a `CompressionStream` 4, the upstream client's stream over bytes it holds
 * 1. Bytes from a socket or a timer never arrive within microtasks, so a read still pending after
 * these turns waits for input, and the answer must not wait with it.
 */
const READY_TURNS = 8;

/** Whether `read` settles without waiting for input (see `READY_TURNS`). */
async function settlesNow(read: Promise<unknown>): Promise<boolean> {
  let settled = false;
  const mark = () => {
    settled = true;
  };
  read.then(mark, mark);
  for (let i = 0; i < READY_TURNS && !settled; i++) await null;
  return settled;
}

/** The chunks a stream yields without waiting for input, up to just past `SMALL_BODY` bytes. */
interface Held {
  parts: Uint8Array[];
  total: number;
  /** The stream ended within them: the body is whole. */
  done: boolean;
  /** The read still waiting for input, to be awaited next (undefined: none started). */
  pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;
}

/** Reads what `reader` already holds, never waiting for input (a read's failure is thrown). */
async function takeHeld(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Held> {
  const parts: Uint8Array[] = [];
  let total = 0;
  while (total <= SMALL_BODY) {
    const read = reader.read();
    if (!(await settlesNow(read))) return { parts, total, done: false, pending: read };
    const { done, value } = await read;
    if (done) return { parts, total, done: true, pending: undefined };
    if (value.length > 0) {
      parts.push(value);
      total += value.length;
    }
  }
  return { parts, total, done: false, pending: undefined };
}

/** The length of a body that is whole in what its stream already holds, else undefined. */
async function heldLength(body: ReadableStream<Uint8Array>): Promise<number | undefined> {
  const reader = body.getReader();
  try {
    const held = await takeHeld(reader);
    return held.done ? held.total : undefined;
  } catch {
    return undefined;
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** A Host value `Deno.serve` would put in the URL (visible ASCII, not empty). */
function validHost(host: string): boolean {
  if (host === "") return false;
  for (let i = 0; i < host.length; i++) {
    const c = host.charCodeAt(i);
    if (c > 0x7e) return false;
  }
  return true;
}

/** Serves `listener` with no limits (tests, the probe and the prototypes). */
export function serveHttp1(
  listener: Deno.Listener,
  handler: (req: Request, remote: Deno.NetAddr) => Response | Promise<Response>,
): { close(): Promise<void> } {
  const conns = new Set<Deno.Conn>();
  const addr = listener.addr as Deno.NetAddr;
  const authority = `localhost:${addr.port}`;
  const nothing = () => {};
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      (conn as Deno.TcpConn).setNoDelay?.(true);
      const remote = conn.remoteAddr as Deno.NetAddr;
      const host: Http1Host = {
        headStarted: nothing,
        readingBody: nothing,
        handling: nothing,
        sending: nothing,
        idle: nothing,
        badFraming: nothing,
        badRequest: nothing,
        handOver: () => Promise.resolve(),
      };
      new Http1Connection(conn, (req) => handler(req, remote), host, authority).run()
        .finally(() => {
          conns.delete(conn);
          try {
            conn.close();
          } catch {
            // closed
          }
        });
    }
  })().catch(() => {});
  return {
    async close() {
      try {
        listener.close();
      } catch {
        // closed
      }
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // closed
        }
      }
      await accepting;
    },
  };
}
