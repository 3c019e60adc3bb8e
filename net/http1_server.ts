/**
 * The data listener's own HTTP/1.1 server: the connection front (`conn_front.ts`) reads the
 * client's requests itself, calls the data-plane app with each, and writes its answers back on
 * the same connection, instead of piping every byte over loopback into `Deno.serve` (a hop that
 * costs throughput; see docs/data-plane.md, "The data listener's own HTTP/1.1 server").
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
import { realTimers, type Timers } from "./timers.ts";
import { type ConnRead, connReader } from "./conn_read.ts";
import { chunkFrame, concatChunks } from "./chunks.ts";
import { headEnd, latin1 } from "./http1_head.ts";
import { DirectAnswer } from "./direct_answer.ts";
import {
  AnswerBuffer,
  CLOSE_END,
  dateLine,
  heldLength,
  KEEP_ALIVE_END,
  LAST_CHUNK,
  takeHeld,
} from "./http1_answer.ts";
import { type BodySource, IncomingRequest, PairHeaders } from "./http1_request.ts";
import {
  BadRequest,
  type BrokenRequestHead,
  MAX_HEAD_BYTES,
  parseRequestHead,
  type RequestHead,
} from "./http1_request_head.ts";

/** Request body left unread by the handler that is still read (and dropped) to keep the connection. */
const DRAIN_LIMIT = 64 * 1024;
const READ_BUFFER = 16 * 1024;
/** Lingering close: how long and how much of what a client still sends is read and dropped. */
const LINGER_MS = 2_000;
const LINGER_BYTES = 1024 * 1024;

/** What a connection needs from whoever runs it (the connection front). */
export interface Http1Host {
  /** The first bytes of a request head have arrived. */
  headStarted(): void;
  /**
   * The handler is reading the body (a read from the client is pending) or not any more, with
   * the bytes that read brought (`received`).
   */
  readingBody(pending: boolean, received?: number): void;
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

/**
 * Answers a request; the data plane's transaction may answer a proxied response with a
 * `DirectAnswer` (typed as a `Response` on its way through the app), which is written as it is.
 */
export type Http1Handler = (req: Request) => Response | Promise<Response>;

/** What every connection of one server shares (made once per listener, not per connection). */
export interface Http1Server {
  /** The URL's authority for a request without a usable Host (as `Deno.serve` uses). */
  readonly authority: string;
  /** The timers of the lingering close. */
  readonly timers: Timers;
}

const DIGITS = /^\d+$/;
const utf8 = new TextEncoder();

const BAD_REQUEST = utf8.encode(
  "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
);
const BAD_FRAMING = utf8.encode(
  "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n" +
    "connection: close\r\ncontent-length: 36\r\n\r\nBad Request: invalid chunked framing",
);
const CONTINUE = utf8.encode("HTTP/1.1 100 Continue\r\n\r\n");
const NO_BODY = new Set([101, 204, 205, 304]);
/** Response headers the server writes itself (framing and connection management). */
const OWN = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "date"]);

/** A client connection served until it closes; resolves when it is done. */
export class Http1Connection {
  #conn: Deno.Conn;
  /** `#conn`'s reads, without the old-generation garbage of `conn.read` (net/conn_read.ts). */
  #readInto: ConnRead;
  #handler: Http1Handler;
  #host: Http1Host;
  #server: Http1Server;
  #buf = new Uint8Array(READ_BUFFER);
  #start = 0;
  #end = 0;
  #eof = false;
  #closed = false;
  /** Bytes read from the client so far. */
  #received = 0;
  /** The answer being written. */
  readonly #answer = new AnswerBuffer();
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

  constructor(conn: Deno.Conn, handler: Http1Handler, host: Http1Host, server: Http1Server) {
    this.#conn = conn;
    this.#readInto = connReader(conn);
    this.#handler = handler;
    this.#host = host;
    this.#server = server;
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
    const timers = this.#server.timers;
    const timer = timers.setTimeout(() => {
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
      timers.clearTimeout(timer);
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
          head.host === undefined || !validHost(head.host) ? this.#server.authority : head.host
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
    this.#received += n;
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
      const before = this.#received;
      const more = this.#eof ? false : await this.#fill();
      this.#host.readingBody(false, this.#received - before);
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
    const answer = this.#answer;
    answer.start(status, res.statusText);
    let length = -1;
    let declared: string | undefined;
    if (res instanceof DirectAnswer) {
      // The upstream's field lines in its order, each on its own line (as nginx passes them).
      const pairs = res.headers;
      for (let i = 0; i < pairs.length; i++) {
        const pair = pairs[i]!;
        if (OWN.has(pair[0])) {
          if (pair[0] === "content-length") declared ??= pair[1];
        } else answer.field(pair[0], pair[1]);
      }
    } else {
      res.headers.forEach((v, k) => {
        if (OWN.has(k)) {
          if (k === "content-length") declared ??= v;
        } else answer.field(k, v);
      });
    }
    // A 204 never declares a length (RFC 9110 §8.6); a 205 is framed as empty below, never by
    // the length of content it must not carry: a client frames a 205 by its Content-Length.
    const hasLength = bodyless && status !== 204 && status !== 205 && declared !== undefined;
    if (hasLength) answer.field("content-length", declared!);
    else if (declared !== undefined) length = DIGITS.test(declared) ? Number(declared) : -1;
    answer.put(dateLine());
    const end = () => close ? CLOSE_END : head.minor === 0 ? KEEP_ALIVE_END : "\r\n";
    const body: Uint8Array | ReadableStream<Uint8Array> | null = bodyless ? null : res.body;
    if (body === null) {
      if (!bodyless || status === 205) answer.put("content-length: 0\r\n");
      else if (head.method === "HEAD" && !hasLength && res.body !== null) {
        // The length the GET would have had, when the body is already whole (as hyper does).
        const whole = res.body instanceof Uint8Array ? res.body.length : await heldLength(res.body);
        if (whole !== undefined) answer.field("content-length", String(whole));
      }
      answer.put(end());
      await this.#write(answer.built(undefined));
      if (bodyless) {
        if (res instanceof DirectAnswer) res.discard();
        else await res.body?.cancel().catch(() => {});
      }
      return this.#after(close);
    }
    if (body instanceof Uint8Array) {
      answer.field("content-length", String(body.length));
      answer.put(end());
      await this.#write(answer.built(body));
      return this.#after(close);
    }
    const reader = body.getReader();
    try {
      // What the stream already holds is taken without waiting for more input (an SSE feed's
      // next event may be minutes away): a body whole in it goes out with Content-Length in one
      // write, else the head and what is there go out at once and the rest as it comes.
      const held = await takeHeld(reader);
      if (held.done) {
        answer.field("content-length", String(held.total));
        answer.put(end());
        await this.#write(answer.built(concatChunks(held.parts, held.total)));
        return this.#after(close);
      }
      // A stream: with a declared length as it is, else chunked (close-delimited for HTTP/1.0).
      const chunked = length < 0 && head.minor === 1;
      if (length >= 0) answer.field("content-length", String(length));
      else if (chunked) answer.put("transfer-encoding: chunked\r\n");
      else close = true;
      answer.put(end());
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
      await this.#write(answer.built(first));
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
  const server: Http1Server = { authority: `localhost:${addr.port}`, timers: realTimers };
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
      new Http1Connection(conn, (req) => handler(req, remote), host, server).run()
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
