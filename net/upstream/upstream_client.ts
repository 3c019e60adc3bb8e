/**
 * How the data plane sends a request to an upstream: one small interface, so the transport can
 * be replaced without touching the transaction. The implementation is the HTTP/1.1 client of
 * `http1_client.ts`; tests may answer with a plain `Response`.
 */
import type { HeaderPairs } from "../http1_head.ts";

/** Where an upstream is: what the client needs of the data plane's upstreams. */
export interface UpstreamOrigin {
  /** `http(s)://host:port`, no trailing slash: `https:` means TLS; pooled connections by it. */
  readonly origin: string;
  readonly hostname: string;
  readonly port: number;
}

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

/** An upstream's answer without a `Headers` copy: the transaction filters the pairs once. */
export interface UpstreamResponse {
  readonly status: number;
  readonly statusText: string;
  /** Lower-case names, as received (hop-by-hop headers included). */
  readonly headers: HeaderPairs;
  /** The declared body length, or -1 without one. */
  readonly contentLength: number;
  readonly body: Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null;
}

/**
 * How a request reaches an upstream.
 *
 * @example
 * ```ts
 * try {
 *   const res = await client.send(upstream, transaction);
 *   // res.status, res.headers (lower-case pairs), res.body (bytes, a stream or null)
 * } catch (err) {
 *   // 504 for a deadline, 502 otherwise; the cause goes to the access log's chain
 *   const status = isTimeout(err) ? 504 : 502;
 *   const rule = upstreamCause(err); // "upstream.refused", "upstream.reset", ...
 * }
 * ```
 */
export interface UpstreamClient {
  /**
   * Sends `request` to `upstream` and resolves with its response once the headers arrived (the
   * body streams). Rejects on a connect failure, a broken connection, an upstream that breaks
   * HTTP/1.1 (`UpstreamProtocolError`), or a deadline: a timeout rejects with a `DOMException`
   * named `TimeoutError` (see {@link isTimeout}).
   */
  send(upstream: UpstreamOrigin, request: UpstreamRequest): Promise<UpstreamResponse | Response>;
  /** Releases pooled connections and timers. */
  close(): void;
}

/** Pooled upstream connections idle longer than this are closed. */
export const POOL_IDLE_MS = 60_000;

/**
 * Why an upstream could not be reached or failed to answer, as the chain entry's rule
 * (`upstream.refused`, `upstream.reset`, `upstream.closed`, `upstream.dns`, `upstream.tls`,
 * `upstream.error`): the access log and the `upstream failed` line say it without debug logging.
 * A pooled connection found dead carries the fresh attempt's failure as its cause.
 */
export function upstreamCause(err: unknown): string {
  const e = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  if (e instanceof Deno.errors.ConnectionRefused) return "upstream.refused";
  if (
    e instanceof Deno.errors.ConnectionReset || e instanceof Deno.errors.ConnectionAborted ||
    e instanceof Deno.errors.BrokenPipe
  ) return "upstream.reset";
  if (e instanceof Deno.errors.InvalidData) return "upstream.tls";
  if (e instanceof Deno.errors.UnexpectedEof || e instanceof Deno.errors.NotConnected) {
    return "upstream.closed";
  }
  const message = e instanceof Error ? e.message : "";
  if (message.startsWith("failed to lookup address")) return "upstream.dns";
  if (/\bcertificate\b|\btls\b|handshake/i.test(message)) return "upstream.tls";
  if (/\bclosed\b/.test(message)) return "upstream.closed";
  return "upstream.error";
}

/** True when an upstream failure was a deadline rather than a refused or broken connection. */
export function isTimeout(err: unknown): boolean {
  return err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError");
}
