/**
 * The data plane's upstream client: HTTP/1.1 over `Deno.connect` (`Deno.connectTls` for
 * `https://` upstreams, the certificate verified), with a keep-alive pool per upstream. It
 * replaces `fetch`, which held the proxy to a third of what this machine can do (see
 * docs/data-plane.md, "The upstream client").
 *
 * - Requests: the head in one write (with the body when it is buffered, and with a streamed body
 *   whose declared `Content-Length` is at most 16 KiB, read whole before a connection is taken
 *   and then sent as bytes), bodies framed by
 *   `Content-Length` or streamed `chunked`; the client's own framing headers are never copied.
 * - Responses: the head parsed strictly (http1_parse.ts; smuggling shapes are a 502), interim 1xx
 *   skipped, bodies by `Content-Length`, `chunked` or the connection's end, none for HEAD, 204 and
 *   304. A body already in the read buffer is handed over as bytes; a longer one streams, one read
 *   per pull, so a slow client slows the upstream instead of filling memory.
 * - Deadlines: connect and response-head deadlines from one sweeping timer (deadlines.ts), and
 *   while a body streams, a limit on the silence between two reads (`bodyIdleTimeoutMs`, like
 *   nginx's `proxy_read_timeout`); an expired one closes the connection. A client that goes away
 *   cancels the body stream, which closes the upstream connection (its unread rest would poison
 *   the pool).
 * - Pool: idle connections per upstream origin, newest first, at most `maxIdle` each, closed after
 *   `idleTimeoutMs`. An idle connection keeps a read pending, so an upstream that closes it is
 *   noticed at once and the connection dropped; one that dies just as it is reused (no byte of the
 *   response came back) is retried once on a fresh connection when the body can be sent again.
 */
import { createDeadlines, type Deadline } from "./deadlines.ts";
import { type ConnRead, connReader } from "../conn_read.ts";
import {
  ChunkedDecoder,
  MAX_HEAD_BYTES,
  parseHead,
  type ResponseHead,
  UpstreamProtocolError,
} from "./http1_parse.ts";
import { chunkFrame } from "../chunks.ts";
import { headEnd, type HeaderPairs, latin1 } from "../http1_head.ts";
import {
  POOL_IDLE_MS,
  type UpstreamClient,
  type UpstreamOrigin,
  type UpstreamRequest,
  type UpstreamResponse,
} from "./upstream_client.ts";

export interface Http1ClientOptions {
  /** Idle connections kept per upstream (default 64). */
  readonly maxIdle?: number;
  /** Idle connections older than this are closed (default {@link POOL_IDLE_MS}). */
  readonly idleTimeoutMs?: number;
  /** Extra CA certificates (PEM) trusted for `https://` upstreams, besides the system's. */
  readonly caCerts?: string[];
  /**
   * Longest silence between two reads of a streaming response body before the connection is
   * closed and the body errors (default {@link BODY_IDLE_MS}); the body as a whole may take as
   * long as it takes.
   */
  readonly bodyIdleTimeoutMs?: number;
}

/** The default for {@link Http1ClientOptions.bodyIdleTimeoutMs} (nginx's proxy_read_timeout). */
export const BODY_IDLE_MS = 60_000;

const READ_SIZE = 16 * 1024;
const BODY_READ_SIZE = 64 * 1024;
/** Interim (1xx) responses skipped before the final one; more is a misbehaving upstream. */
const MAX_INTERIM = 16;
const EMPTY: Uint8Array<ArrayBuffer> = new Uint8Array(0);
const utf8 = new TextEncoder();
const ignore = () => {};

const enum Step {
  More,
  Done,
  End,
}

/** A reused connection failed before any byte of the response: safe to retry once. */
class StaleConnection extends Error {
  constructor(cause: unknown) {
    super("the pooled upstream connection was closed", { cause });
  }
}

function timeoutError(what: string): DOMException {
  return new DOMException(`The upstream did not ${what} in time`, "TimeoutError");
}

/** One upstream connection: its socket, read buffer and pool bookkeeping. */
class Connection implements Deadline {
  buf: Uint8Array<ArrayBuffer> = new Uint8Array(READ_SIZE);
  start = 0;
  end = 0;
  /** The current request's streamed body's declared length, -1 when it goes chunked. */
  sendLength = -1;
  /** The current request's body (bytes) went into {@link out} after the head. */
  bodyInline = false;
  /** A read started while idle; the next {@link read} takes its result. */
  pending: Promise<number | null> | undefined = undefined;
  idle = false;
  idleSince = 0;
  closed = false;
  /** Served a request before (a failure before any answer may be the upstream's idle close). */
  reused = false;
  timedOut = false;
  /** The current request's body has been written completely. */
  bodyDone = true;
  /** Why the current request's body could not be sent (the client's stream failed). */
  bodyFailure: unknown = undefined;
  /** Outgoing bytes for the head (and a small buffered body); grown when needed. */
  out = new Uint8Array(4096);
  /** Ends an idle connection whose pending read completed (made at its first idle time). */
  onIdleRead: (() => void) | undefined = undefined;
  /** Some byte of the current response arrived (a reused connection that failed before is stale). */
  seen = false;
  /** The connection is its own deadline (deadlines.ts): armed per request, nothing allocated. */
  at = 0;
  slot = -1;

  /** What an expired deadline does: closes the connection, which ends the read waiting on it. */
  onExpire(): void {
    this.timedOut = true;
    this.close();
  }

  /** `conn`'s reads, without the old-generation garbage of `conn.read` (net/conn_read.ts). */
  readonly readInto: ConnRead;

  constructor(readonly conn: Deno.Conn, readonly origin: string) {
    this.readInto = connReader(conn);
  }

  /** Reads more bytes after `end`; false at the end of the stream. */
  async fill(): Promise<boolean> {
    const n = await this.read();
    if (n === null) return false;
    this.end += n;
    return true;
  }

  /**
   * Starts reading after `end` (the read started while idle, if any); the caller adds what came
   * to `end`. Not `async`: the response head's loop awaits it without a frame of its own.
   */
  read(): Promise<number | null> {
    if (this.start === this.end) {
      this.start = 0;
      this.end = 0;
    } else if (this.end === this.buf.length) {
      if (this.start > 0) {
        this.buf.copyWithin(0, this.start, this.end);
        this.end -= this.start;
        this.start = 0;
      } else {
        const grown = new Uint8Array(this.buf.length * 2);
        grown.set(this.buf);
        this.buf = grown;
      }
    }
    const read = this.pending ?? this.readInto(this.buf.subarray(this.end));
    this.pending = undefined;
    return read;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.conn.close();
    } catch {
      // already closed by the runtime
    }
  }
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let at = 0;
  while (at < data.length) at += await conn.write(data.subarray(at));
}

/** Strings longer than this are encoded with `encodeInto`; shorter ones byte by byte. */
const SHORT_STRING = 64;

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
 * `at`, growing it; returns the end. The head is written piece by piece, so no head string is
 * built (and flattened) per request. A code unit above 0xff is never cut to its low 8 bits
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

/** The request body as bytes, a stream, or nothing. */
function bodyOf(body: BodyInit | undefined): Uint8Array | ReadableStream<Uint8Array> | undefined {
  if (body === undefined || body === null) return undefined;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ReadableStream) return body as ReadableStream<Uint8Array>;
  if (typeof body === "string") return utf8.encode(body);
  return new Response(body).body ?? undefined;
}

const DECIMAL = /^\d{1,15}$/;
/** Streamed request bodies declared this long or shorter are gathered and sent with the head. */
const GATHER_MAX = 16 * 1024;

/** The `Content-Length` among the headers (the last one, as the head takes it); -1 without. */
function declaredLength(headers: HeaderPairs): number {
  let declared: string | undefined;
  for (let i = 0; i < headers.length; i++) {
    if (headers[i]![0] === "content-length") declared = headers[i]![1];
  }
  return declared !== undefined && DECIMAL.test(declared) ? Number(declared) : -1;
}

/** Creates the HTTP/1.1 upstream client. */
export function createHttp1Upstream(options: Http1ClientOptions = {}): UpstreamClient {
  const maxIdle = options.maxIdle ?? 64;
  const idleTimeoutMs = options.idleTimeoutMs ?? POOL_IDLE_MS;
  const bodyIdleMs = options.bodyIdleTimeoutMs ?? BODY_IDLE_MS;
  const deadlines = createDeadlines();
  const pools = new Map<string, Connection[]>();
  let idleCount = 0;
  let sweeper: ReturnType<typeof setInterval> | undefined;
  let closed = false;

  function sweepIdle(): void {
    const now = performance.now();
    for (const idle of pools.values()) {
      // Oldest first: stop at the first one still fresh.
      while (idle.length > 0 && now - idle[0]!.idleSince >= idleTimeoutMs) drop(idle.shift()!);
    }
    if (idleCount === 0) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  }

  function drop(c: Connection): void {
    if (c.idle) {
      c.idle = false;
      idleCount--;
      const idle = pools.get(c.origin);
      const i = idle?.indexOf(c) ?? -1;
      if (i >= 0) idle!.splice(i, 1);
    }
    c.close();
  }

  /** A connection whose exchange ended cleanly goes back to the pool (or is closed). */
  function finish(c: Connection, keepAlive: boolean): void {
    if (!keepAlive || closed || c.closed || !c.bodyDone || c.start !== c.end) {
      c.close();
      return;
    }
    let idle = pools.get(c.origin);
    if (idle === undefined) pools.set(c.origin, idle = []);
    if (idle.length >= maxIdle) drop(idle[0]!);
    c.start = 0;
    c.end = 0;
    c.idle = true;
    c.reused = true;
    c.idleSince = performance.now();
    idle.push(c);
    idleCount++;
    sweeper ??= setInterval(sweepIdle, Math.max(250, Math.min(idleTimeoutMs / 4, 5_000)));
    // Anything arriving on an idle connection (its end, or bytes nobody asked for) ends it.
    const read = c.readInto(c.buf);
    c.pending = read;
    // This reaction runs before the one of a `fill` that takes the read when the connection is
    // reused (reactions run in the order they were added), and `take` clears `idle` first.
    c.onIdleRead ??= () => {
      if (c.idle) drop(c);
    };
    read.then(c.onIdleRead, c.onIdleRead);
  }

  function take(origin: string): Connection | undefined {
    const idle = pools.get(origin);
    const c = idle?.pop();
    if (c === undefined) return undefined;
    c.idle = false;
    idleCount--;
    return c;
  }

  async function connect(upstream: UpstreamOrigin, ms: number): Promise<Connection> {
    const tls = upstream.origin.startsWith("https:");
    let expired = false;
    let deadline: Deadline | undefined;
    // TCP connects take a signal, so a dial into a black hole stops at the deadline; a TLS
    // connection that arrives after its deadline is closed on arrival.
    const ac = tls ? undefined : new AbortController();
    const dial: Promise<Deno.Conn> = tls
      ? Deno.connectTls({
        hostname: upstream.hostname,
        port: upstream.port,
        caCerts: options.caCerts,
        alpnProtocols: ["http/1.1"],
      })
      : Deno.connect({ hostname: upstream.hostname, port: upstream.port, signal: ac!.signal });
    const timeout = new Promise<never>((_, reject) => {
      deadline = deadlines.start(ms, () => {
        expired = true;
        reject(timeoutError("accept the connection"));
        ac?.abort();
      });
    });
    dial.then((conn) => {
      if (expired) conn.close();
    }, ignore);
    try {
      const conn = await Promise.race([dial, timeout]);
      if (!tls) (conn as Deno.TcpConn).setNoDelay(true);
      return new Connection(conn, upstream.origin);
    } finally {
      deadlines.clear(deadline!);
    }
  }

  /**
   * Puts the request head into `c.out` (with the body when it is bytes that fit); returns where
   * it ends. A streamed body's declared length (-1: none, it goes chunked) is left in
   * `c.sendLength`.
   */
  function putHead(
    c: Connection,
    request: UpstreamRequest,
    body: Uint8Array | ReadableStream<Uint8Array> | undefined,
  ): number {
    // The head as one string, encoded with one `encodeInto`: for a head of ASCII (nearly every
    // one) that is about half the CPU of writing it piece by piece (measured: 315-364 against
    // 556-708 ns for the WAF's usual nine fields, the process's CPU over 300,000 heads, six
    // alternated rounds). Anything else goes piece by piece ({@link putPieces}).
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

  /** Writes the head (`c.out` up to `end`) and then the body when it is bytes not in it. */
  async function writeBuffered(c: Connection, end: number, body: Uint8Array | undefined) {
    // One write takes the whole head nearly always (no `writeAll` frame then).
    const n = await c.conn.write(c.out.subarray(0, end));
    if (n < end) await writeAll(c.conn, c.out.subarray(n, end));
    if (body !== undefined && !c.bodyInline) await writeAll(c.conn, body);
  }

  /** Writes the head and leaves the body streaming. */
  async function writeStreamed(
    c: Connection,
    body: ReadableStream<Uint8Array>,
    end: number,
  ): Promise<void> {
    const reader = body.getReader();
    const n = await c.conn.write(c.out.subarray(0, end));
    if (n < end) await writeAll(c.conn, c.out.subarray(n, end));
    c.bodyDone = false;
    // The body streams while the response is awaited: an upstream may answer early.
    writeBody(c, reader, c.sendLength, 0).then(() => {
      c.bodyDone = true;
    }, (err) => {
      c.bodyFailure = err;
      c.close();
    });
  }

  /**
   * A small streamed body with a declared length, read whole before a connection is taken: it
   * then goes out with the head in one write (one system call and one wake-up of the upstream
   * instead of two or more) and can be sent again when a pooled connection turns out dead. Read
   * first, not on a taken connection: a client sending slowly would hold an idle connection with
   * nothing written while the upstream's keep-alive timeout closes it under the request (a 502).
   * The wait ends at `ms` (the response deadline, which counts from here) with a timeout, the
   * body's stream cancelled; a body shorter or longer than declared is an error.
   */
  async function gather(
    body: ReadableStream<Uint8Array>,
    length: number,
    ms: number,
  ): Promise<Uint8Array> {
    const reader = body.getReader();
    let expired = false;
    const deadline = deadlines.start(ms, () => {
      expired = true;
      reader.cancel(timeoutError("answer")).catch(ignore);
    });
    const out = new Uint8Array(length);
    let got = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (expired) throw timeoutError("answer");
        if (done) break;
        if (got + value.length > length) {
          throw new Error("the request body is longer than declared");
        }
        out.set(value, got);
        got += value.length;
      }
      if (got !== length) throw new Error("the request body is shorter than declared");
      return out;
    } catch (err) {
      reader.cancel(err).catch(ignore);
      throw expired ? timeoutError("answer") : err;
    } finally {
      deadlines.clear(deadline);
    }
  }

  async function writeBody(
    c: Connection,
    reader: ReadableStreamDefaultReader<Uint8Array>,
    length: number,
    sent: number,
  ): Promise<void> {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (value.length === 0) continue;
        if (c.closed) throw new Error("the upstream connection closed");
        sent += value.length;
        if (length < 0) {
          await writeAll(c.conn, chunkFrame(value));
        } else {
          if (sent > length) throw new Error("the request body is longer than declared");
          await writeAll(c.conn, value);
        }
      }
      if (length < 0) await writeAll(c.conn, utf8.encode("0\r\n\r\n"));
      else if (sent !== length) throw new Error("the request body is shorter than declared");
    } catch (err) {
      reader.cancel(err).catch(ignore);
      throw err;
    }
  }

  /** The body: none, the bytes already read, or a stream reading the rest. */
  function responseBody(
    c: Connection,
    head: ResponseHead,
    method: string,
  ): Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null {
    const keepAlive = !head.close;
    if (method === "HEAD" || head.status === 204 || head.status === 304) {
      finish(c, keepAlive);
      return null;
    }
    if (head.chunked) {
      const decoder = new ChunkedDecoder();
      const parts: Uint8Array[] = [];
      c.start = decoder.next(c.buf, c.start, c.end, parts);
      if (decoder.done) {
        const bytes = concat(parts);
        finish(c, keepAlive);
        return bytes;
      }
      return chunkedStream(c, decoder, parts, keepAlive);
    }
    const length = head.contentLength;
    if (length >= 0 && c.end - c.start >= length) {
      const bytes = length === 0 ? EMPTY : c.buf.slice(c.start, c.start + length);
      c.start += length;
      finish(c, keepAlive);
      return bytes;
    }
    return lengthStream(c, length, keepAlive);
  }

  /** A body read that closes the connection when the upstream stays silent too long. */
  async function bodyRead<T>(c: Connection, read: Promise<T>): Promise<T> {
    deadlines.arm(c, bodyIdleMs);
    try {
      return await read;
    } finally {
      deadlines.clear(c);
    }
  }

  /**
   * A response body stream: each pull runs `step`, which enqueues at most one piece and says
   * whether the body is complete (`done`: the connection may be reused; `end`: it ended with the
   * connection). Cancelling it (the client went away) closes the connection.
   */
  function bodyStream(
    c: Connection,
    keepAlive: boolean,
    step: (controller: ReadableStreamDefaultController<Uint8Array>) => Promise<Step>,
  ): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const state = await step(controller);
          if (state === Step.More) return;
          controller.close();
          if (state === Step.Done) finish(c, keepAlive);
          else c.close();
        } catch (err) {
          c.close();
          controller.error(c.timedOut ? timeoutError("send the body") : err);
        }
      },
      cancel() {
        c.close();
      },
    }, { highWaterMark: 0 });
  }

  /** A `Content-Length` body (`length` >= 0) or one ending with the connection (-1). */
  function lengthStream(
    c: Connection,
    length: number,
    keepAlive: boolean,
  ): ReadableStream<Uint8Array> {
    let remaining = length;
    return bodyStream(c, keepAlive, async (controller) => {
      let chunk: Uint8Array;
      if (c.start < c.end) {
        const take = remaining < 0 ? c.end - c.start : Math.min(remaining, c.end - c.start);
        chunk = c.buf.slice(c.start, c.start + take);
        c.start += take;
      } else {
        const fresh = new Uint8Array(
          remaining < 0 ? BODY_READ_SIZE : Math.min(remaining, BODY_READ_SIZE),
        );
        const n = await bodyRead(c, c.readInto(fresh));
        if (n === null) {
          if (remaining >= 0) throw new UpstreamProtocolError("the upstream body ended early");
          return Step.End;
        }
        chunk = fresh.subarray(0, n);
      }
      if (remaining >= 0) remaining -= chunk.length;
      controller.enqueue(chunk);
      return remaining === 0 ? Step.Done : Step.More;
    });
  }

  function chunkedStream(
    c: Connection,
    decoder: ChunkedDecoder,
    first: Uint8Array[],
    keepAlive: boolean,
  ): ReadableStream<Uint8Array> {
    // The first parts are views into the read buffer, which the next read overwrites.
    let parts: Uint8Array[] = first.length > 0 ? [concat(first)] : [];
    return bodyStream(c, keepAlive, async (controller) => {
      while (parts.length === 0 && !decoder.done) {
        if (!(await bodyRead(c, c.fill()))) {
          throw new UpstreamProtocolError("the upstream body ended early");
        }
        c.start = decoder.next(c.buf, c.start, c.end, parts);
        if (parts.length > 0) parts = [concat(parts)];
      }
      if (parts.length > 0) controller.enqueue(parts[0]!);
      parts = [];
      return decoder.done ? Step.Done : Step.More;
    });
  }

  /**
   * One request on one connection, up to the final response head (interim 1xx skipped); `c.seen`
   * tells if any byte of the response came. One `async` frame: the head is put together
   * synchronously and the reads are awaited here.
   */
  async function exchange(
    c: Connection,
    request: UpstreamRequest,
    body: Uint8Array | ReadableStream<Uint8Array> | undefined,
    ms: number,
  ): Promise<UpstreamResponse> {
    c.seen = false;
    c.bodyDone = true;
    c.bodyFailure = undefined;
    deadlines.arm(c, ms);
    try {
      const end = putHead(c, request, body);
      if (body instanceof ReadableStream) await writeStreamed(c, body, end);
      else await writeBuffered(c, end, body);
      let interim = 0;
      let head: ResponseHead;
      for (;;) {
        let at = headEnd(c.buf, c.start, c.end);
        while (at < 0) {
          if (c.end - c.start > MAX_HEAD_BYTES) {
            throw new UpstreamProtocolError("response head too large");
          }
          // What was searched stays searched: the next search starts two bytes before its end (a
          // terminator is at most three bytes), counted from `start` since a read may move the
          // bytes. Searching from `start` again made a head dripped a byte at a time quadratic.
          const searched = c.end - c.start;
          const n = await c.read();
          if (n === null) throw new Error("the upstream closed the connection");
          c.end += n;
          c.seen = true;
          at = headEnd(c.buf, c.start + Math.max(0, searched - 2), c.end);
        }
        if (at - c.start > MAX_HEAD_BYTES) {
          throw new UpstreamProtocolError("response head too large");
        }
        head = parseHead(latin1(c.buf, c.start, at));
        c.start = at;
        if (head.status >= 200) break;
        if (head.status === 101) throw new UpstreamProtocolError("unexpected 101 response");
        if (++interim > MAX_INTERIM) throw new UpstreamProtocolError("too many 1xx responses");
      }
      deadlines.clear(c);
      return {
        status: head.status,
        statusText: head.statusText,
        headers: head.headers,
        contentLength: head.contentLength,
        body: responseBody(c, head, request.method),
      };
    } catch (err) {
      deadlines.clear(c);
      c.close();
      if (c.timedOut) throw timeoutError("answer");
      if (c.bodyFailure !== undefined) throw c.bodyFailure;
      if (c.reused && !c.seen && !(err instanceof UpstreamProtocolError)) {
        throw new StaleConnection(err);
      }
      throw err;
    }
  }

  return {
    async send(upstream, request) {
      let body = bodyOf(request.upstreamBody);
      let ms = request.responseTimeoutMs;
      if (body instanceof ReadableStream) {
        const length = declaredLength(request.upstreamHeaders);
        if (length >= 0 && length <= GATHER_MAX) {
          const t0 = performance.now();
          body = await gather(body, length, ms);
          ms = Math.max(1, ms - (performance.now() - t0));
        }
      }
      const idle = take(upstream.origin);
      if (idle !== undefined) {
        try {
          return await exchange(idle, request, body, ms);
        } catch (err) {
          if (!(err instanceof StaleConnection)) throw err;
          if (body instanceof ReadableStream) throw err.cause;
        }
      }
      const c = await connect(upstream, request.connectTimeoutMs);
      return await exchange(c, request, body, ms);
    },
    close() {
      closed = true;
      clearInterval(sweeper);
      sweeper = undefined;
      for (const idle of pools.values()) for (const c of idle.splice(0)) c.close();
      idleCount = 0;
      deadlines.close();
    },
  };
}

function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  if (parts.length === 0) return EMPTY;
  if (parts.length === 1) return parts[0]!.slice();
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
