/**
 * The request as the upstream HTTP/1.1 client writes it: the head put into the connection's
 * output buffer (with a small body after it, so both go out in one write), the body's framing
 * this client's own (`Content-Length`, or `chunked` for a stream without a declared length),
 * never the client's.
 */
import type { HeaderPairs } from "../http1_head.ts";
import type { Connection } from "./connection.ts";
import type { UpstreamRequest } from "./upstream_client.ts";

/** A request body as the client sends it: bytes, a stream, or none. */
export type SendBody = Uint8Array | ReadableStream<Uint8Array> | undefined;

const utf8 = new TextEncoder();
const DECIMAL = /^\d{1,15}$/;
/** Streamed request bodies declared this long or shorter are gathered and sent with the head. */
export const GATHER_MAX = 16 * 1024;
/** Strings longer than this are encoded with `encodeInto`; shorter ones byte by byte. */
const SHORT_STRING = 64;

/** The request body as bytes, a stream, or nothing. */
export function bodyOf(body: BodyInit | undefined): SendBody {
  if (body === undefined || body === null) return undefined;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ReadableStream) return body as ReadableStream<Uint8Array>;
  if (typeof body === "string") return utf8.encode(body);
  return new Response(body).body ?? undefined;
}

/** The `Content-Length` among the headers (the last one, as the head takes it); -1 without. */
export function declaredLength(headers: HeaderPairs): number {
  let declared: string | undefined;
  for (let i = 0; i < headers.length; i++) {
    if (headers[i]![0] === "content-length") declared = headers[i]![1];
  }
  return declared !== undefined && DECIMAL.test(declared) ? Number(declared) : -1;
}

/**
 * Puts the request head into `c.out` (with the body when it is bytes that fit); returns where
 * it ends. A streamed body's declared length (-1: none, it goes chunked) is left in
 * `c.sendLength`.
 */
export function putHead(c: Connection, request: UpstreamRequest, body: SendBody): number {
  // An ASCII head (nearly every one) as one string and one `encodeInto`, cheaper than piece by
  // piece (see docs/bench/2026-11-26-own-client-cheaper.md).
  const headers = request.upstreamHeaders;
  let declared: string | undefined;
  let text = `${request.method} ${request.pathAndQuery} HTTP/1.1\r\n`;
  for (let i = 0; i < headers.length; i++) {
    const pair = headers[i]!;
    const name = pair[0];
    // The framing is this client's own, never the client's.
    if (name === "content-length") declared = pair[1];
    else if (name !== "transfer-encoding") text += `${name}: ${pair[1]}\r\n`;
  }
  let length = -1;
  let framing: string;
  if (body instanceof Uint8Array) framing = `content-length: ${body.length}\r\n\r\n`;
  else if (body === undefined) {
    framing = declared === undefined ? "\r\n" : "content-length: 0\r\n\r\n";
  } else if (declared !== undefined && DECIMAL.test(declared)) {
    length = Number(declared);
    framing = `content-length: ${length}\r\n\r\n`;
  } else framing = "transfer-encoding: chunked\r\n\r\n";
  text += framing;
  const { read, written } = utf8.encodeInto(text, room(c, 0, text.length));
  let end = read === text.length && written === read ? written : putPieces(c, request, framing);
  c.sendLength = length;
  c.bodyInline = body instanceof Uint8Array &&
    (c.out.length - end >= body.length || body.length <= GATHER_MAX);
  if (c.bodyInline) {
    room(c, end, (body as Uint8Array).length).set(body as Uint8Array, end);
    end += (body as Uint8Array).length;
  }
  return end;
}

/**
 * The head piece by piece, when it is not all ASCII: the target as UTF-8 (see {@link putUtf8}),
 * every other string a byte a code unit (or as UTF-8 when it has one above 0xff, see
 * {@link put}).
 */
function putPieces(c: Connection, request: UpstreamRequest, framing: string): number {
  let end = put(c, request.method, 0);
  end = put(c, " ", end);
  end = putUtf8(c, request.pathAndQuery, end);
  end = put(c, " HTTP/1.1\r\n", end);
  const headers = request.upstreamHeaders;
  for (let i = 0; i < headers.length; i++) {
    const [name, value] = headers[i]!;
    if (name === "content-length" || name === "transfer-encoding") continue;
    end = put(c, name, end);
    end = put(c, ": ", end);
    end = put(c, value, end);
    end = put(c, "\r\n", end);
  }
  return put(c, framing, end);
}

/** Makes room for `n` more bytes after `at` in `c.out`. */
function room(c: Connection, at: number, n: number): Uint8Array {
  if (c.out.length - at < n) {
    const grown = new Uint8Array(Math.max(c.out.length * 2, at + n + 1024));
    grown.set(c.out.subarray(0, at));
    c.out = grown;
  }
  return c.out;
}

/**
 * Writes `s` (code units 0-255, one byte each: header bytes are not UTF-8) into `c.out` from
 * `at`, growing it; returns the end. A code unit above 0xff is never cut to its low 8 bits
 * (U+010A would become LF and start a header or a request the WAF never saw): such a string
 * goes out as UTF-8, whose bytes for it are all above 0x7f.
 */
function put(c: Connection, s: string, at: number): number {
  const n = s.length;
  const out = room(c, at, n);
  if (n > SHORT_STRING) {
    const { read, written } = utf8.encodeInto(s, out.subarray(at));
    if (read === n && written === n) return at + n;
  }
  for (let i = 0; i < n; i++) {
    const code = s.charCodeAt(i);
    if (code > 0xff) return putUtf8(c, s, at);
    out[at + i] = code;
  }
  return at + n;
}

/**
 * Writes `s` as UTF-8: the request target, which the server decoded from UTF-8 (so these are
 * the client's own bytes again; hyper's `Request.url` is decoded the same way).
 */
function putUtf8(c: Connection, s: string, at: number): number {
  const n = s.length;
  let out = room(c, at, n);
  for (let i = 0; i < n; i++) {
    const code = s.charCodeAt(i);
    if (code > 0x7f) {
      out = room(c, at + i, (n - i) * 3);
      return at + i + utf8.encodeInto(s.slice(i), out.subarray(at + i)).written;
    }
    out[at + i] = code;
  }
  return at + n;
}
