/**
 * Prototypes of the data listener's path from the socket to the app, for
 * `scripts/bench_conn_server.ts` (issue 13: the connection front's loopback hop was the largest
 * single cost). One process serves one variant with one handler:
 *
 * - `serve`: `Deno.serve` on the port (no limits at all; the floor);
 * - `front`: today's connection front (`net/conn_front.ts` through `net/listen.ts`), each
 *   connection piped over loopback TCP into a private `Deno.serve`;
 * - `unix`: the same piping, framing followed, into `Deno.serve` on a Unix-domain socket
 *   (candidate B: a cheaper hop);
 * - `own`: the front serving HTTP/1.1 itself (`net/http1_server.ts`, candidate A): no hop,
 *   no hyper.
 *
 * Handlers: `hello` answers at once; `proxy` is the bare own-client proxy of
 * `bench_bare_proxy.ts` inside the data plane's Hono app.
 *
 * ```sh
 * deno run -A scripts/proto_conn_server.ts <serve|front|unix|own> <port> <hello|proxy> [upstream]
 * ```
 */
import { systemClock } from "../mod/core/clock.ts";
import { createUpstreamPool } from "../mod/data_plane/upstream_pool.ts";
import type { HeaderPairs } from "../net/http1_head.ts";
import { createHttp1Upstream } from "../net/upstream/http1_client.ts";
import { createDataApp } from "../routes/proxy/data_app.ts";
import { createLogger } from "../mod/core/logger.ts";
import { listen } from "../net/listen.ts";
import { limitsFromConfig } from "../app/connection_limits.ts";
import { createConnectionStats } from "../mod/core/connection_stats.ts";
import { RequestFraming } from "../net/http1_framing.ts";
import { serveHttp1 } from "../net/http1_server.ts";

const [variant, portText, handlerName = "hello", upstream = ""] = Deno.args;
const port = Number(portText);
if (!["serve", "front", "unix", "own"].includes(variant ?? "") || !(port > 0)) {
  console.error(
    "usage: proto_conn_server.ts <serve|front|unix|own> <port> <hello|proxy> [upstream]",
  );
  Deno.exit(2);
}

function pathOf(url: string): string {
  return url.slice(url.indexOf("/", url.indexOf("//") + 2));
}

const HOP = new Set(["connection", "keep-alive", "transfer-encoding"]);
const hello = new TextEncoder().encode("hello from the prototype\n");

function makeHandler(): (req: Request, peer: string) => Promise<Response> {
  if (handlerName === "hello") {
    return (_req) =>
      Promise.resolve(new Response(hello, { headers: { "content-type": "text/plain" } }));
  }
  const http1 = createHttp1Upstream();
  const target = createUpstreamPool([upstream], systemClock).upstreams[0]!;
  const proxy = async (req: Request): Promise<Response> => {
    const headers: HeaderPairs = [];
    req.headers.forEach((v, k) => {
      if (k !== "connection") headers.push([k, v]);
    });
    const body = req.body === null ? undefined : await req.bytes();
    const res = await http1.send(target, {
      method: req.method,
      pathAndQuery: pathOf(req.url),
      upstreamHeaders: headers,
      upstreamBody: body,
      connectTimeoutMs: 5_000,
      responseTimeoutMs: 60_000,
    });
    if (res instanceof Response) return res;
    return new Response(res.body, {
      status: res.status,
      headers: res.headers.filter(([k]) => !HOP.has(k)),
    });
  };
  const data = createDataApp(
    (req) => proxy(req),
    createLogger({ format: "text", level: "error" }),
    () => "-",
  );
  return (req, peer) => data.handle(req, peer, "http");
}

const handler = makeHandler();
const limits = limitsFromConfig({
  enabled: true,
  header_timeout: "60s",
  body_timeout: "60s",
  body_min_rate: 500,
  body_min_rate_after: "10s",
  keepalive_timeout: "75s",
  max_connections: 10_000,
  max_connections_per_client: 0,
});

switch (variant) {
  case "serve":
    Deno.serve(
      { hostname: "127.0.0.1", port, onListen() {} },
      (req, info) => handler(req, info.remoteAddr.hostname),
    );
    break;
  case "front":
    listen({
      hostname: "127.0.0.1",
      port,
      handler: (req, info) => handler(req, info.remoteAddr.hostname),
      front: { limits, stats: createConnectionStats().listener("data") },
    });
    break;
  case "unix": {
    const path = `${await Deno.makeTempDir()}/inner.sock`;
    Deno.serve({ path, onListen() {} }, (req) => handler(req, "127.0.0.1"));
    const listener = Deno.listen({ hostname: "127.0.0.1", port });
    (async () => {
      for await (const client of listener) {
        (client as Deno.TcpConn).setNoDelay(true);
        pipeUnix(client, path).catch(() => {});
      }
    })();
    break;
  }
  case "own": {
    const listener = Deno.listen({ hostname: "127.0.0.1", port });
    serveHttp1(listener, (req, remote) => handler(req, remote.hostname));
    break;
  }
}

/** The front's two pipe loops, framing followed, over a Unix-domain socket. */
async function pipeUnix(client: Deno.Conn, path: string): Promise<void> {
  const inner = await Deno.connect({ transport: "unix", path });
  const framing = new RequestFraming();
  const inbound = (async () => {
    const buf = new Uint8Array(64 * 1024);
    while (true) {
      const n = await client.read(buf).catch(() => null);
      if (n === null) break;
      const chunk = buf.subarray(0, n);
      if (framing.phase !== "tunnel") framing.feed(chunk);
      await writeAll(inner, chunk);
    }
    await inner.closeWrite().catch(() => {});
  })();
  const buf = new Uint8Array(64 * 1024);
  try {
    while (true) {
      const n = await inner.read(buf).catch(() => null);
      if (n === null) break;
      await writeAll(client, buf.subarray(0, n));
    }
  } finally {
    client.close();
    inner.close();
    await inbound.catch(() => {});
  }
}

async function writeAll(conn: Deno.Conn, chunk: Uint8Array): Promise<void> {
  let at = 0;
  while (at < chunk.length) at += await conn.write(chunk.subarray(at));
}
