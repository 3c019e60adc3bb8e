/**
 * How the data plane sends a request to an upstream: one small interface, so the transport can
 * be replaced without touching the transaction (issue #13 brings our own HTTP/1.1 client). This
 * implementation is `fetch` with one pooled client for every upstream (connections are reused
 * per origin; `allowHost` lets the Host header through, so the upstream sees the name the client
 * asked for), a connect probe for cold upstreams, and a response-header deadline.
 */
import type { Clock } from "../../mod/core/clock.ts";
import type { Upstream } from "../../mod/data_plane/upstream_pool.ts";
import { createDeadlines } from "./deadlines.ts";
import type { HeaderPairs } from "./forwarding.ts";

/** What the transaction sends upstream (the transaction itself provides it). */
export interface UpstreamRequest {
  readonly method: string;
  /** Path and query as received, e.g. `/a/b?x=1`. */
  readonly pathAndQuery: string;
  /** The request headers to send (hop-by-hop removed, forwarding headers set). */
  readonly upstreamHeaders: HeaderPairs;
  /** The body: buffered bytes, the streaming remainder, or none. */
  readonly upstreamBody: BodyInit | undefined;
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
}

export interface UpstreamClient {
  /**
   * Sends `request` to `upstream` and resolves with its response once the headers arrived (the
   * body streams). Rejects on a connect failure, a broken connection, or a deadline: a timeout
   * rejects with a `DOMException` named `TimeoutError` or `AbortError` (see {@link isTimeout}).
   */
  send(upstream: Upstream, request: UpstreamRequest): Promise<Response>;
  /** Releases pooled connections and timers. */
  close(): void;
}

/** Pooled upstream connections idle longer than this are closed. */
export const POOL_IDLE_MS = 60_000;

/** True when an upstream failure was a deadline rather than a refused or broken connection. */
export function isTimeout(err: unknown): boolean {
  return err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError");
}

/**
 * Fetch has no connect timeout, so an upstream without a recent answer (no pooled connection
 * can be assumed) is first dialled with the connect deadline: an unreachable host fails in
 * `connect_ms` instead of holding the request until the response deadline.
 */
async function probe(upstream: Upstream, timeoutMs: number): Promise<void> {
  const conn = await Deno.connect({
    hostname: upstream.hostname,
    port: upstream.port,
    signal: AbortSignal.timeout(timeoutMs),
  });
  conn.close();
}

/** The `fetch`-based upstream client. */
export function createFetchUpstream(clock: Clock): UpstreamClient {
  const client = Deno.createHttpClient({ allowHost: true, poolIdleTimeout: POOL_IDLE_MS });
  const deadlines = createDeadlines();
  return {
    async send(upstream, request) {
      // Checked here rather than in probe() so the usual request pays no extra await.
      if (clock.now() - upstream.lastOkAt >= POOL_IDLE_MS) {
        await probe(upstream, request.connectTimeoutMs);
      }
      const deadline = deadlines.start(request.responseTimeoutMs);
      try {
        return await fetch(upstream.origin + request.pathAndQuery, {
          method: request.method,
          headers: request.upstreamHeaders,
          body: request.upstreamBody,
          client,
          redirect: "manual",
          signal: deadline.signal,
        });
      } finally {
        deadlines.clear(deadline);
      }
    },
    close() {
      deadlines.close();
      client.close();
    },
  };
}
