/**
 * A front's connection served by the front itself (`http1_server.ts`, the data listener's own
 * HTTP/1.1 server): the deadlines follow what the server reports the connection doing, as they
 * follow the piped bytes in `front_pipe.ts`, and what it does not serve is handed over to the
 * pipe at a request boundary.
 */
import type { FrontConnection, FrontContext } from "./front_conn.ts";
import { pipe } from "./front_pipe.ts";
import { Http1Connection, type Http1Handler, type Http1Server } from "./http1_server.ts";
import type { Http1Host } from "./http1_server.ts";
import type { BrokenRequestHead } from "./http1_request_head.ts";

/**
 * Serves `c` with the handler `serve` gives for its peer until it closes or is handed over to
 * the pipe.
 */
export async function serveOwn(
  front: FrontContext,
  c: FrontConnection,
  serve: (client: Deno.NetAddr) => Http1Handler,
  server: Http1Server,
): Promise<void> {
  (c.client as Deno.TcpConn).setNoDelay?.(true);
  const handler = serve({ transport: "tcp", hostname: c.address, port: c.clientPort });
  try {
    await new Http1Connection(c.client, handler, new OwnHost(front, c), server).run();
  } finally {
    if (!c.piped) front.end(c);
  }
}

/** What the own server reports of one connection, turned into its deadline. */
class OwnHost implements Http1Host {
  constructor(readonly front: FrontContext, readonly c: FrontConnection) {}

  headStarted(): void {
    const c = this.c;
    c.waiting = false;
    c.bodyBegins();
    // The first head's deadline runs from the connection's start.
    if (c.heads++ > 0) {
      c.deadline = this.front.now + this.front.limits.headerTimeoutMs;
      c.reason = "header_timeout";
    }
  }

  readingBody(pending: boolean, received = 0): void {
    const c = this.c;
    if (pending) return c.awaitBody(this.front.now, this.front.limits);
    c.bodyArrived(received, this.front.now);
    c.deadline = Infinity;
  }

  handling(): void {
    // The answer is the handler's (and the site's deadline).
    this.c.deadline = Infinity;
    this.front.handling(this.c, true);
  }

  sending(pending: boolean): void {
    this.c.sendingSince = pending ? this.front.now || 1 : 0;
  }

  idle(): void {
    const c = this.c;
    c.waiting = true;
    this.front.handling(c, false);
    c.deadline = this.front.now + this.front.limits.keepAliveTimeoutMs;
    c.reason = "keepalive_timeout";
    if (this.front.stopped) this.front.end(c);
  }

  badFraming(request: BrokenRequestHead, reason: string): void {
    this.front.stats.closed.bad_framing++;
    this.front.recordBroken(this.c, { ...request, reason });
  }

  badRequest(request: BrokenRequestHead | undefined, reason: string): void {
    if (request !== undefined) this.front.recordBroken(this.c, { ...request, reason });
  }

  handOver(pending: Uint8Array): Promise<void> {
    return pipe(this.front, this.c, this.c.clientPort, pending);
  }
}
