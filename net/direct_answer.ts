/**
 * The private path between the data listener's own HTTP/1.1 server (`net/http1_server.ts`)
 * and the transaction, for what nobody else reads: the server hands over the header
 * pairs it parsed, and gets a proxied response back as status, header pairs and the upstream's
 * body as the upstream client produced it, which it writes itself. A `Response` built there only
 * to be taken apart again validated and sorted every header twice and put the body behind a
 * stream. The data plane's own status and block pages take the same path for a request of
 * the own server (`routes/proxy/status_page.ts`: the page's bytes whole, no body stream).
 * Everything else (`Deno.serve` for HTTP/2 and upgrades, custom block pages, the edge's header
 * rules, cache and compression) keeps getting a real `Response`.
 */
import type { HeaderPairs } from "./http1_head.ts";

/** Where the own server's requests carry their parsed header pairs. */
export const HEADER_PAIRS: unique symbol = Symbol("header pairs");

/**
 * The header pairs of a request of the own server (lower-case names, sorted, repeats joined,
 * as `Headers.forEach` gives them; shared, never changed), or undefined for a `Request`.
 */
export function ownHeaderPairs(req: Request): HeaderPairs | undefined {
  return (req as { [HEADER_PAIRS]?: HeaderPairs })[HEADER_PAIRS];
}

/**
 * The answer's `content-length` as every path writes it (RFC 9110 §8.6, §15.3.5, §15.3.6): none
 * on a 204, exactly `0` on a 205 (a client frames a 205 by its length; the content it must not
 * carry is never sent), and otherwise the one value the upstream parser accepted (`5, 5` and
 * two `5` lines are one `5`; differing values never get here, they are a 502). `length` is the
 * parsed value, or -1 without one. Returns `pairs` itself when nothing changes (nearly always).
 */
export function framedPairs(pairs: HeaderPairs, status: number, length: number): HeaderPairs {
  let want: string | undefined;
  if (status === 205) want = "0";
  else if (status !== 204) {
    // No parsed length (none declared, or a `Response` from a test client): left as it came.
    if (!(length >= 0)) return pairs;
    want = String(length);
  }
  let seen = 0;
  let same = true;
  for (let i = 0; i < pairs.length; i++) {
    if (pairs[i]![0] === "content-length") {
      seen++;
      if (pairs[i]![1] !== want) same = false;
    }
  }
  if (want === undefined ? seen === 0 : seen === 1 && same) return pairs;
  const out: HeaderPairs = [];
  let put = want === undefined;
  for (const pair of pairs) {
    if (pair[0] !== "content-length") out.push(pair);
    else if (!put) {
      out.push(["content-length", want!]);
      put = true;
    }
  }
  if (!put) out.push(["content-length", want!]);
  return out;
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
