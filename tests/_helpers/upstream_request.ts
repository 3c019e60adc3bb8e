/**
 * What the transaction hands an `UpstreamClient`, for the client tests: a request with its
 * defaults (a GET of `/` for `shop.test`) and bodies streamed in pieces.
 */
import type { UpstreamRequest } from "../../net/upstream/upstream_client.ts";

export function upstreamRequest(overrides: Partial<UpstreamRequest> = {}): UpstreamRequest {
  return {
    method: "GET",
    pathAndQuery: "/",
    upstreamHeaders: [["host", "shop.test"]],
    upstreamBody: undefined,
    connectTimeoutMs: 2_000,
    responseTimeoutMs: 5_000,
    ...overrides,
  };
}

/** A body stream yielding `parts`, each as its own chunk. */
export function streamOf(...parts: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(enc.encode(p));
      c.close();
    },
  });
}
