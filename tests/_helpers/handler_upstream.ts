/**
 * An in-process `UpstreamClient` for tests that need no socket: the upstream at `origin` is a
 * handler function called with each request as a `Request`. It keeps the interface's contract
 * (tests/net/upstream/upstream_client_test.ts runs it beside the real HTTP/1.1 client): the
 * response deadline on the given timers, no body for HEAD, a refused connection for any other
 * origin.
 */
import { realTimers, type Timers } from "../../net/timers.ts";
import type {
  UpstreamClient,
  UpstreamOrigin,
  UpstreamRequest,
} from "../../net/upstream/upstream_client.ts";

export type UpstreamHandler = (req: Request) => Response | Promise<Response>;

export function createHandlerUpstream(
  origin: string,
  handler: UpstreamHandler,
  options: { timers?: Timers } = {},
): UpstreamClient {
  const timers = options.timers ?? realTimers;
  return {
    async send(upstream: UpstreamOrigin, request: UpstreamRequest): Promise<Response> {
      if (upstream.origin !== origin) {
        throw new Deno.errors.ConnectionRefused(`connection refused: ${upstream.origin}`);
      }
      const req = new Request(`${origin}${request.pathAndQuery}`, {
        method: request.method,
        headers: request.upstreamHeaders,
        body: request.upstreamBody,
      });
      let timer: ReturnType<Timers["setTimeout"]> | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = timers.setTimeout(
          () => reject(new DOMException("The upstream did not answer in time", "TimeoutError")),
          request.responseTimeoutMs,
        );
      });
      try {
        const res = await Promise.race([Promise.resolve(handler(req)), deadline]);
        if (request.method !== "HEAD") return res;
        await res.body?.cancel();
        return new Response(null, res);
      } finally {
        timers.clearTimeout(timer);
      }
    },
    close() {},
  };
}
