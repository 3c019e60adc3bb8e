/**
 * The data plane's upstream client: HTTP/1.1 over `Deno.connect` (`Deno.connectTls` for
 * `https://` upstreams, the certificate verified), with a keep-alive pool per upstream. It
 * replaces `fetch`, which held the proxy back (see docs/data-plane.md, "The proxy").
 *
 * - Requests: the head in one write (with the body when it is buffered, and with a streamed body
 *   whose declared `Content-Length` is at most 16 KiB, read whole before a connection is taken
 *   and then sent as bytes), bodies framed by
 *   `Content-Length` or streamed `chunked`; the client's own framing headers are never copied.
 * - Responses: the head parsed strictly (http1_parse.ts; smuggling shapes are a 502), interim 1xx
 *   skipped (exchange.ts), bodies by `Content-Length`, `chunked` or the connection's end, none for HEAD, 204 and
 *   304. A body already in the read buffer is handed over as bytes; a longer one streams, one read
 *   per pull, so a slow client slows the upstream instead of filling memory (response_body.ts).
 * - Deadlines: connect and response-head deadlines from one sweeping timer (deadlines.ts), and
 *   while a body streams, a limit on the silence between two reads (`bodyIdleTimeoutMs`, like
 *   nginx's `proxy_read_timeout`); an expired one closes the connection. A client that goes away
 *   cancels the body stream, which closes the upstream connection (its unread rest would poison
 *   the pool).
 * - Pool (pool.ts): idle connections per upstream origin, newest first, at most `maxIdle` each, closed after
 *   `idleTimeoutMs`. An idle connection keeps a read pending, so an upstream that closes it is
 *   noticed at once and the connection dropped; one that dies just as it is reused (no byte of the
 *   response came back) is retried once on a fresh connection when the body can be sent again.
 */
import { realTimers, type Timers } from "../timers.ts";
import { dial } from "./connection.ts";
import { createDeadlines, type Deadlines } from "./deadlines.ts";
import { Http1Exchange, StaleConnection } from "./exchange.ts";
import { ConnectionPool } from "./pool.ts";
import { bodyOf, declaredLength, GATHER_MAX } from "./request_head.ts";
import { ResponseBodies } from "./response_body.ts";
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
  /** The clock and timers of the deadlines and the pool (default: the real ones). */
  readonly timers?: Timers;
}

/** The default for {@link Http1ClientOptions.bodyIdleTimeoutMs} (nginx's proxy_read_timeout). */
export const BODY_IDLE_MS = 60_000;

/**
 * Creates the HTTP/1.1 upstream client.
 *
 * @example
 * ```ts
 * const client = createHttp1Upstream({ maxIdle: 16 });
 * const res = await client.send(
 *   { origin: "http://127.0.0.1:8080", hostname: "127.0.0.1", port: 8080 },
 *   {
 *     method: "GET",
 *     pathAndQuery: "/health",
 *     upstreamHeaders: [["host", "shop.test"]],
 *     upstreamBody: undefined,
 *     connectTimeoutMs: 2_000,
 *     responseTimeoutMs: 30_000,
 *   },
 * );
 * console.log(res.status, res.headers); // 200 [["content-type", "text/plain"], ...]
 * client.close(); // closes the pooled connections and stops the timers
 * ```
 */
export function createHttp1Upstream(options: Http1ClientOptions = {}): UpstreamClient {
  return new Http1Client(options);
}

/**
 * The HTTP/1.1 upstream client: a request goes on an idle pooled connection to its upstream
 * (retried once on a fresh one when that turns out dead and the body can be sent again), or on
 * a new connection.
 */
export class Http1Client implements UpstreamClient {
  readonly #timers: Timers;
  readonly #caCerts: string[] | undefined;
  readonly #deadlines: Deadlines;
  readonly #pool: ConnectionPool;
  readonly #exchange: Http1Exchange;

  constructor(options: Http1ClientOptions = {}) {
    this.#timers = options.timers ?? realTimers;
    this.#caCerts = options.caCerts;
    this.#deadlines = createDeadlines(20, this.#timers);
    this.#pool = new ConnectionPool({
      maxIdle: options.maxIdle ?? 64,
      idleTimeoutMs: options.idleTimeoutMs ?? POOL_IDLE_MS,
      timers: this.#timers,
    });
    const bodies = new ResponseBodies(
      this.#deadlines,
      this.#pool,
      options.bodyIdleTimeoutMs ?? BODY_IDLE_MS,
    );
    this.#exchange = new Http1Exchange(this.#deadlines, bodies);
  }

  async send(upstream: UpstreamOrigin, request: UpstreamRequest): Promise<UpstreamResponse> {
    let body = bodyOf(request.upstreamBody);
    let ms = request.responseTimeoutMs;
    if (body instanceof ReadableStream) {
      const length = declaredLength(request.upstreamHeaders);
      if (length >= 0 && length <= GATHER_MAX) {
        const t0 = this.#timers.now();
        body = await this.#exchange.gather(body, length, ms);
        ms = Math.max(1, ms - (this.#timers.now() - t0));
      }
    }
    const idle = this.#pool.take(upstream.origin);
    if (idle !== undefined) {
      try {
        return await this.#exchange.run(idle, request, body, ms);
      } catch (err) {
        if (!(err instanceof StaleConnection)) throw err;
        if (body instanceof ReadableStream) throw err.cause;
      }
    }
    const c = await dial(upstream, request.connectTimeoutMs, this.#deadlines, this.#caCerts);
    return await this.#exchange.run(c, request, body, ms);
  }

  close(): void {
    this.#pool.close();
    this.#deadlines.close();
  }
}
