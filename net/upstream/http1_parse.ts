/**
 * The strict half of the upstream HTTP/1.1 client: reading an upstream's response head and its
 * chunked body (RFC 9112). Anything that could frame a response two ways (response smuggling) or
 * that `Response` would refuse is an {@link UpstreamProtocolError}, which the data plane answers
 * with 502 and the trace id, never passing the response on.
 */
import {
  EMPTY_LINE,
  FIELD,
  FieldLine,
  type HeaderPairs,
  scanFieldLine,
  stripCr,
  trimOws,
  UNENDED,
} from "../http1_head.ts";

/** Largest response head (status line and headers) accepted from an upstream. */
export const MAX_HEAD_BYTES = 64 * 1024;
/** Most header lines accepted in one response head. */
export const MAX_HEADERS = 256;
/** Longest chunk-size line (with extensions) and the most trailer bytes read and discarded. */
export const MAX_CHUNK_LINE = 4096;
export const MAX_TRAILER_BYTES = 64 * 1024;

/** The upstream broke HTTP/1.1 framing or syntax: the data plane answers 502. */
export class UpstreamProtocolError extends Error {
  override readonly name = "UpstreamProtocolError";
}

/** What the response head says. */
export interface ResponseHead {
  readonly status: number;
  readonly statusText: string;
  /** Header pairs with lower-case names, in the order received (hop-by-hop ones included). */
  readonly headers: HeaderPairs;
  /** The declared body length, or -1 without a Content-Length. */
  readonly contentLength: number;
  readonly chunked: boolean;
  /** The upstream will close the connection after this response (or it is HTTP/1.0). */
  readonly close: boolean;
}

/** An element of a Content-Length list: digits only. */
const DIGITS = /^\d{1,15}$/;

/**
 * The parts of a status line `HTTP/1.x NNN[ reason]`: the minor version, the status (100-999)
 * and the reason phrase (tab, visible ASCII, spaces and bytes above 0x7f; empty when absent);
 * undefined when the line is not one. Scanned in place: this runs for every proxied response (it
 * is what the pattern `^HTTP\/1\.([01]) ([1-9]\d\d)(?: ([\t\x20-\x7e\x80-\xff]*))?$` accepts).
 */
export function statusLineParts(
  line: string,
): [minor: number, status: number, reason: string] | undefined {
  if (!line.startsWith("HTTP/1.") || line.charCodeAt(8) !== 32) return undefined;
  const version = line.charCodeAt(7);
  const a = line.charCodeAt(9) - 48;
  const b = line.charCodeAt(10) - 48;
  const c = line.charCodeAt(11) - 48;
  // NaN past the end compares false both ways.
  if (
    (version !== 48 && version !== 49) || !(a >= 1 && a <= 9) || !(b >= 0 && b <= 9) ||
    !(c >= 0 && c <= 9)
  ) return undefined;
  if (line.length > 12) {
    if (line.charCodeAt(12) !== 32) return undefined;
    for (let i = 13; i < line.length; i++) {
      const d = line.charCodeAt(i);
      if (d !== 9 && (d < 0x20 || d === 0x7f || d > 0xff)) return undefined;
    }
  }
  return [version - 48, a * 100 + b * 10 + c, line.length > 13 ? line.slice(13) : ""];
}

/** The response parser's field line, reused for every line (parsing is synchronous). */
const line = new FieldLine();
/** The error of each refused field line, by what the scanner found (NO_COLON, BAD_NAME, ...). */
const LINE_ERRORS = [
  "",
  "",
  "malformed header line",
  "malformed header line",
  "malformed header name",
  "malformed header value",
] as const;

/**
 * Parses a response head (status line to the empty line, terminator included). The lines are
 * walked in place by the scanner both head parsers share (`scanFieldLine`): this runs for every
 * proxied response.
 */
export function parseHead(text: string): ResponseHead {
  const lf = text.indexOf("\n");
  const statusLine = stripCr(text.slice(0, lf));
  const m = statusLineParts(statusLine);
  if (m === undefined) throw new UpstreamProtocolError("malformed status line");
  const [minor, status, statusText] = m;
  // `Response` takes 200-599 only; 1xx are interim and handled by the client.
  if (status > 599) throw new UpstreamProtocolError("status code out of range");
  const headers: HeaderPairs = [];
  let contentLength = -1;
  let te: string | undefined;
  let close = minor === 0;
  let lines = 0;
  for (let start = lf + 1;; start = line.lf + 1) {
    const found = scanFieldLine(text, start, line, false);
    if (found === EMPTY_LINE) break;
    if (found === UNENDED) throw new UpstreamProtocolError("malformed header line");
    if (++lines > MAX_HEADERS) throw new UpstreamProtocolError("too many response headers");
    if (found !== FIELD) throw new UpstreamProtocolError(LINE_ERRORS[found]);
    const name = line.name;
    const value = line.value;
    if (name === "content-length") {
      // One value nearly always: no list split for it.
      if (value.indexOf(",") < 0) contentLength = lengthValue(value, contentLength);
      else for (const part of value.split(",")) contentLength = lengthValue(part, contentLength);
    } else if (name === "transfer-encoding") {
      te = te === undefined ? value : `${te}, ${value}`;
    } else if (name === "connection") {
      if (value === "keep-alive") {
        if (minor === 0) close = false;
      } else if (value === "close") close = true;
      else {
        for (const t of value.split(",")) {
          const token = trimOws(t).toLowerCase();
          if (token === "close") close = true;
          else if (token === "keep-alive" && minor === 0) close = false;
        }
      }
    }
    headers.push([name, value]);
  }
  let chunked = false;
  if (te !== undefined && status >= 200 && status !== 204 && status !== 304) {
    if (contentLength !== -1) {
      throw new UpstreamProtocolError("both Transfer-Encoding and Content-Length");
    }
    // Only `chunked` can be decoded for the client; other codings cannot cross the proxy.
    if (minor === 0 || trimOws(te).toLowerCase() !== "chunked") {
      throw new UpstreamProtocolError("unsupported Transfer-Encoding");
    }
    chunked = true;
  }
  return {
    status,
    statusText,
    headers,
    contentLength,
    chunked,
    close,
  };
}

/**
 * One element of a response's Content-Length list as a number; throws when it is not digits or
 * differs from the length read before (`-1`: none yet).
 */
function lengthValue(part: string, before: number): number {
  const v = trimOws(part);
  if (!DIGITS.test(v)) throw new UpstreamProtocolError("invalid Content-Length");
  const n = Number(v);
  if (before !== -1 && before !== n) {
    throw new UpstreamProtocolError("conflicting Content-Length values");
  }
  return n;
}

// Where the chunked decoder is (plain numbers: this runs for every piece of a chunked body).
const SIZE = 0;
const DATA = 1;
const DATA_END = 2;
const TRAILER = 3;
const DONE = 4;

/**
 * A chunked-body decoder fed from a buffer: {@link next} consumes what it can from
 * `buf[start, end)` and returns the data bytes found (views into `buf`). An unfinished line is
 * left unconsumed, for the caller to keep in front of the next read. Extensions are skipped,
 * trailers read and discarded (never passed on: the client gets none).
 */
export class ChunkedDecoder {
  #state: number = SIZE;
  #remaining = 0;
  #trailerBytes = 0;

  get done(): boolean {
    return this.#state === DONE;
  }

  /** Decodes from `buf[start, end)`, pushing data views to `out`; returns where it stopped. */
  next(buf: Uint8Array, start: number, end: number, out: Uint8Array[]): number {
    let i = start;
    while (i < end && this.#state !== DONE) {
      if (this.#state === DATA) {
        const take = Math.min(this.#remaining, end - i);
        out.push(buf.subarray(i, i + take));
        this.#remaining -= take;
        i += take;
        if (this.#remaining === 0) this.#state = DATA_END;
      } else if (this.#state === DATA_END) {
        // CRLF (or a bare LF) after the chunk data.
        if (buf[i] === 10) i += 1;
        else if (buf[i] === 13 && i + 1 === end) break;
        else if (buf[i] === 13 && buf[i + 1] === 10) i += 2;
        else throw new UpstreamProtocolError("invalid chunk terminator");
        this.#state = SIZE;
      } else {
        const lf = buf.indexOf(10, i);
        if (lf < 0 || lf >= end) {
          if (end - i > MAX_CHUNK_LINE) throw new UpstreamProtocolError("chunk line too long");
          break;
        }
        if (this.#state === SIZE) {
          if (lf - i > MAX_CHUNK_LINE) throw new UpstreamProtocolError("chunk line too long");
          this.#remaining = chunkSize(buf, i, lf);
          this.#state = this.#remaining === 0 ? TRAILER : DATA;
        } else {
          this.#trailerBytes += lf + 1 - i;
          if (this.#trailerBytes > MAX_TRAILER_BYTES) {
            throw new UpstreamProtocolError("trailers too large");
          }
          // An empty line (LF or CRLF) ends the trailers and the body.
          if (lf === i || (lf === i + 1 && buf[i] === 13)) this.#state = DONE;
        }
        i = lf + 1;
      }
    }
    return i;
  }
}

/** The hex size of a chunk-size line `buf[from, lf)`, extensions and whitespace skipped. */
function chunkSize(buf: Uint8Array, from: number, lf: number): number {
  let end = lf;
  if (end > from && buf[end - 1] === 13) end--;
  let n = 0;
  let digits = 0;
  let i = from;
  for (; i < end; i++) {
    const c = buf[i]!;
    const d = c >= 48 && c <= 57
      ? c - 48
      : c >= 97 && c <= 102
      ? c - 87
      : c >= 65 && c <= 70
      ? c - 55
      : -1;
    if (d < 0) break;
    n = n * 16 + d;
    digits++;
  }
  if (digits === 0 || digits > 12) throw new UpstreamProtocolError("invalid chunk size");
  // After the size: optional whitespace, then nothing or `;extension`.
  while (i < end && (buf[i] === 32 || buf[i] === 9)) i++;
  if (i < end && buf[i] !== 59) throw new UpstreamProtocolError("invalid chunk size");
  for (; i < end; i++) {
    if (buf[i] === 13 || buf[i] === 0) throw new UpstreamProtocolError("invalid chunk extension");
  }
  return n;
}
