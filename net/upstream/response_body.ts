/**
 * An upstream response's body as the client hands it on: none (HEAD, 204, 304), the bytes when
 * the whole body is already in the read buffer, or a stream reading the rest, one read a pull,
 * so a slow client slows the upstream instead of filling memory. While a body streams, a silence
 * between two reads longer than the body idle deadline closes the connection; a client that goes
 * away cancels the stream, which closes the connection too (its unread rest would poison the
 * pool). A body read to its end gives the connection back to the pool.
 */
import type { Connection } from "./connection.ts";
import { timeoutError } from "./connection.ts";
import type { Deadlines } from "./deadlines.ts";
import { ChunkedDecoder, type ResponseHead, UpstreamProtocolError } from "./http1_parse.ts";
import type { ConnectionPool } from "./pool.ts";
import { concatChunks } from "../chunks.ts";

/** A response body as the client hands it on. */
export type ResponseBody = Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null;

const BODY_READ_SIZE = 64 * 1024;
const EMPTY: Uint8Array<ArrayBuffer> = new Uint8Array(0);

// What a body stream's step found (plain numbers: one per pull).
/** More of the body is to come. */
const MORE = 0;
/** The body is complete: the connection may be reused. */
const DONE = 1;
/** The body ended with the connection. */
const END = 2;
type Step = typeof MORE | typeof DONE | typeof END;

/** The bodies of one client's responses (one per client; the state is the connection's). */
export class ResponseBodies {
  constructor(
    readonly deadlines: Deadlines,
    readonly pool: ConnectionPool,
    readonly bodyIdleMs: number,
  ) {}

  /** The body of the response `head` to `method` read from `c`. */
  of(c: Connection, head: ResponseHead, method: string): ResponseBody {
    const keepAlive = !head.close;
    if (method === "HEAD" || head.status === 204 || head.status === 304) {
      this.pool.release(c, keepAlive);
      return null;
    }
    if (head.chunked) {
      const decoder = new ChunkedDecoder();
      const parts: Uint8Array[] = [];
      c.start = decoder.next(c.buf, c.start, c.end, parts);
      if (decoder.done) {
        const bytes = concat(parts);
        this.pool.release(c, keepAlive);
        return bytes;
      }
      return this.#chunkedStream(c, decoder, parts, keepAlive);
    }
    const length = head.contentLength;
    if (length >= 0 && c.end - c.start >= length) {
      const bytes = length === 0 ? EMPTY : c.buf.slice(c.start, c.start + length);
      c.start += length;
      this.pool.release(c, keepAlive);
      return bytes;
    }
    return this.#lengthStream(c, length, keepAlive);
  }

  /** A body read that closes the connection when the upstream stays silent too long. */
  async #bodyRead<T>(c: Connection, read: Promise<T>): Promise<T> {
    this.deadlines.arm(c, this.bodyIdleMs);
    try {
      return await read;
    } finally {
      this.deadlines.clear(c);
    }
  }

  /**
   * A response body stream: each pull runs `step`, which enqueues at most one piece and says
   * whether the body is complete (`DONE`: the connection may be reused; `END`: it ended with the
   * connection). Cancelling it (the client went away) closes the connection.
   */
  #bodyStream(
    c: Connection,
    keepAlive: boolean,
    step: (controller: ReadableStreamDefaultController<Uint8Array>) => Promise<Step>,
  ): ReadableStream<Uint8Array> {
    const pool = this.pool;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const state = await step(controller);
          if (state === MORE) return;
          controller.close();
          if (state === DONE) pool.release(c, keepAlive);
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
  #lengthStream(c: Connection, length: number, keepAlive: boolean): ReadableStream<Uint8Array> {
    let remaining = length;
    return this.#bodyStream(c, keepAlive, async (controller) => {
      let chunk: Uint8Array;
      if (c.start < c.end) {
        const take = remaining < 0 ? c.end - c.start : Math.min(remaining, c.end - c.start);
        chunk = c.buf.slice(c.start, c.start + take);
        c.start += take;
      } else {
        const fresh = new Uint8Array(
          remaining < 0 ? BODY_READ_SIZE : Math.min(remaining, BODY_READ_SIZE),
        );
        const n = await this.#bodyRead(c, c.readInto(fresh));
        if (n === null) {
          if (remaining >= 0) throw new UpstreamProtocolError("the upstream body ended early");
          return END;
        }
        chunk = fresh.subarray(0, n);
      }
      if (remaining >= 0) remaining -= chunk.length;
      controller.enqueue(chunk);
      return remaining === 0 ? DONE : MORE;
    });
  }

  #chunkedStream(
    c: Connection,
    decoder: ChunkedDecoder,
    first: Uint8Array[],
    keepAlive: boolean,
  ): ReadableStream<Uint8Array> {
    // The first parts are views into the read buffer, which the next read overwrites.
    let parts: Uint8Array[] = first.length > 0 ? [concat(first)] : [];
    return this.#bodyStream(c, keepAlive, async (controller) => {
      while (parts.length === 0 && !decoder.done) {
        if (!(await this.#bodyRead(c, c.fill()))) {
          throw new UpstreamProtocolError("the upstream body ended early");
        }
        c.start = decoder.next(c.buf, c.start, c.end, parts);
        if (parts.length > 0) parts = [concat(parts)];
      }
      if (parts.length > 0) controller.enqueue(parts[0]!);
      parts = [];
      return decoder.done ? DONE : MORE;
    });
  }
}

/** The parts (views into the read buffer) as one array of their own. */
function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  if (parts.length === 0) return EMPTY;
  if (parts.length === 1) return parts[0]!.slice();
  let n = 0;
  for (const p of parts) n += p.length;
  return concatChunks(parts, n) as Uint8Array<ArrayBuffer>;
}
