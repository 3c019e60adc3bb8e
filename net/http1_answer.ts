/**
 * An answer of the own HTTP/1.1 server as bytes: the status line and field lines written into a
 * buffer the connection keeps (no head string per answer), the `date` line made once a second,
 * and what an answer's body stream already holds taken without waiting for input, so a body
 * whole in it goes out with the head in one write.
 */

/** The largest answer head and body a connection keeps a write buffer for. */
const OUT_KEEP = 16 * 1024;
/** At most this many bytes an answer's stream already holds are taken before its head is written. */
const SMALL_BODY = 64 * 1024;

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
export function dateLine(): string {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateText = `date: ${new Date(now).toUTCString()}\r\n`;
  }
  return dateText;
}

/** Status codes as text, made once. */
const STATUS_TEXT: string[] = [];
for (let code = 100; code < 600; code++) STATUS_TEXT[code] = String(code);

/** One connection's answer being built: the head piece by piece, then the body after it. */
export class AnswerBuffer {
  /** The buffer kept for small answers. */
  #out = new Uint8Array(2048);
  /** The buffer of the answer being built (`#out`, or one of its own when larger) and its end. */
  #build = this.#out;
  #at = 0;

  /** Starts an answer: its status line (`statusText`, or the usual reason for `status`). */
  start(status: number, statusText: string): void {
    this.#build = this.#out;
    this.#at = 0;
    this.put("HTTP/1.1 ");
    this.put(STATUS_TEXT[status] ?? String(status));
    this.put(" ");
    this.put(statusText || REASONS[status] || "");
    this.put("\r\n");
  }

  /**
   * Appends `s` to the answer being built: one byte per code unit (header values are bytes, kept
   * as latin1 code units). A code unit above 0xff, which neither `Headers` nor the upstream
   * parser lets through, is written as `?`, never cut to 8 bits (U+010A would become LF).
   */
  put(s: string): void {
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
  field(name: string, value: string): void {
    this.put(name);
    this.put(": ");
    this.put(value);
    this.put("\r\n");
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
  built(body: Uint8Array | undefined): Uint8Array {
    if (body !== undefined) {
      if (this.#build.length - this.#at < body.length) this.#room(body.length);
      this.#build.set(body, this.#at);
      this.#at += body.length;
    }
    return this.#build.subarray(0, this.#at);
  }
}

export const LAST_CHUNK = new TextEncoder().encode("0\r\n\r\n");
export const CLOSE_END = "connection: close\r\n\r\n";
/** An HTTP/1.0 client that asked to keep the connection is told it is kept. */
export const KEEP_ALIVE_END = "connection: keep-alive\r\n\r\n";

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
export async function takeHeld(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Held> {
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
export async function heldLength(body: ReadableStream<Uint8Array>): Promise<number | undefined> {
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
