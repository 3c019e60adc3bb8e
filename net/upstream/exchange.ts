/**
 * One request on one upstream connection, up to the final response head: the head (with a
 * small body) in one write, a streamed body sent while the response is awaited (an upstream may
 * answer early), interim 1xx responses skipped, the response-head deadline armed on the
 * connection. A reused connection that fails before any byte of the response came back is
 * reported as stale, so the client can retry once on a fresh one.
 */
import { chunkFrame } from "../chunks.ts";
import { headEnd, latin1 } from "../http1_head.ts";
import { type Connection, timeoutError, writeAll } from "./connection.ts";
import type { Deadlines } from "./deadlines.ts";
import {
  MAX_HEAD_BYTES,
  parseHead,
  type ResponseHead,
  UpstreamProtocolError,
} from "./http1_parse.ts";
import { putHead, type SendBody } from "./request_head.ts";
import type { ResponseBodies } from "./response_body.ts";
import type { UpstreamRequest, UpstreamResponse } from "./upstream_client.ts";

/** Interim (1xx) responses skipped before the final one; more is a misbehaving upstream. */
const MAX_INTERIM = 16;
const LAST_CHUNK = new TextEncoder().encode("0\r\n\r\n");
const ignore = () => {};

/** A reused connection failed before any byte of the response: safe to retry once. */
export class StaleConnection extends Error {
  constructor(cause: unknown) {
    super("the pooled upstream connection was closed", { cause });
  }
}

/** The exchanges of one client (one per client; a request's state is its connection's). */
export class Http1Exchange {
  constructor(readonly deadlines: Deadlines, readonly bodies: ResponseBodies) {}

  /**
   * Sends `request` with `body` on `c` and reads up to the final response head within `ms`;
   * `c.seen` tells if any byte of the response came. One `async` frame: the head is put
   * together synchronously and the reads are awaited here.
   */
  async run(
    c: Connection,
    request: UpstreamRequest,
    body: SendBody,
    ms: number,
  ): Promise<UpstreamResponse> {
    const deadlines = this.deadlines;
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
        body: this.bodies.of(c, head, request.method),
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

  /**
   * A small streamed body with a declared length, read whole before a connection is taken: it
   * then goes out with the head in one write (one system call and one wake-up of the upstream
   * instead of two or more) and can be sent again when a pooled connection turns out dead. Read
   * first, not on a taken connection: a client sending slowly would hold an idle connection with
   * nothing written while the upstream's keep-alive timeout closes it under the request (a 502).
   * The wait ends at `ms` (the response deadline, which counts from here) with a timeout, the
   * body's stream cancelled; a body shorter or longer than declared is an error.
   */
  async gather(
    body: ReadableStream<Uint8Array>,
    length: number,
    ms: number,
  ): Promise<Uint8Array> {
    const reader = body.getReader();
    let expired = false;
    const deadline = this.deadlines.start(ms, () => {
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
      this.deadlines.clear(deadline);
    }
  }
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
  writeBody(c, reader, c.sendLength).then(() => {
    c.bodyDone = true;
  }, (err) => {
    c.bodyFailure = err;
    c.close();
  });
}

/** Sends a streamed body: `length` bytes as declared, or chunked (`length` -1). */
async function writeBody(
  c: Connection,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  length: number,
): Promise<void> {
  let sent = 0;
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
    if (length < 0) await writeAll(c.conn, LAST_CHUNK);
    else if (sent !== length) throw new Error("the request body is shorter than declared");
  } catch (err) {
    reader.cancel(err).catch(ignore);
    throw err;
  }
}
