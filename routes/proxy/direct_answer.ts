/**
 * The private path between the data listener's own HTTP/1.1 server (`routes/http1_server.ts`)
 * and the transaction, for what nobody else reads (issue 13): the server hands over the header
 * pairs it parsed, and gets a proxied response back as status, header pairs and the upstream's
 * body as the upstream client produced it, which it writes itself. A `Response` built there only
 * to be taken apart again validated and sorted every header twice and put the body behind a
 * stream. Everything else (`Deno.serve` for HTTP/2 and upgrades, status and block pages, the
 * edge's header rules, cache and compression) keeps getting a real `Response`.
 */
import type { HeaderPairs } from "./forwarding.ts";

/** Where the own server's requests carry their parsed header pairs. */
export const HEADER_PAIRS: unique symbol = Symbol("header pairs");

/**
 * The header pairs of a request of the own server (lower-case names, sorted, repeats joined,
 * as `Headers.forEach` gives them; shared, never changed), or undefined for a `Request`.
 */
export function ownHeaderPairs(req: Request): HeaderPairs | undefined {
  return (req as { [HEADER_PAIRS]?: HeaderPairs })[HEADER_PAIRS];
}

/** The body of a proxied answer: the bytes already read, a stream of the rest, or none. */
export type AnswerBody = Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null;

/**
 * An upstream's answer to a request of the own server: hop-by-hop headers already removed and
 * the trace id added (`downstreamHeaders`), header values as the upstream parser accepted them
 * (no CR, LF or NUL; code units 0-255, one byte each).
 */
export class DirectAnswer {
  constructor(
    readonly status: number,
    readonly statusText: string,
    /** Lower-case names in the upstream's order, repeats as separate pairs. */
    readonly headers: HeaderPairs,
    readonly body: AnswerBody,
  ) {}

  /** The same answer as a `Response`, for a caller that is not the own server. */
  toResponse(): Response {
    return new Response(this.body, {
      status: this.status,
      statusText: this.statusText,
      headers: this.headers,
    });
  }

  /** Discards a body that will not be sent (its stream's upstream connection closes). */
  discard(): void {
    if (this.body instanceof ReadableStream) this.body.cancel().catch(() => {});
  }
}
