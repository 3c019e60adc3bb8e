/**
 * The bare Deno proxies `bench_proxy.ts` starts as baselines in the same run: `Deno.serve` plus
 * either `fetch` through one pooled `Deno.createHttpClient` (`fetch`, the floor for any proxy built
 * on Deno's own client) or the data plane's HTTP/1.1 client (`http1`), with only the `connection`
 * header dropped; `http1-hono` runs the latter inside the data plane's Hono app (one catch-all
 * route, `data_app.ts`), which isolates what Hono costs. No site lookup, inspection, forwarding
 * headers or access log.
 *
 * ```sh
 * deno run -A scripts/bench_bare_proxy.ts <port> <upstream origin> [fetch|http1|http1-hono]
 * ```
 */
import { systemClock } from "../mod/core/clock.ts";
import { createUpstreamPool } from "../mod/data_plane/upstream_pool.ts";
import type { HeaderPairs } from "../net/http1_head.ts";
import { createHttp1Upstream } from "../net/upstream/http1_client.ts";
import { createDataApp } from "../routes/proxy/data_app.ts";
import { createLogger } from "../mod/core/logger.ts";

const [port, upstream, client = "fetch"] = Deno.args;
const CLIENTS = ["fetch", "http1", "http1-hono"];
if (port === undefined || upstream === undefined || !CLIENTS.includes(client)) {
  console.error("usage: bench_bare_proxy.ts <port> <upstream origin> [fetch|http1|http1-hono]");
  Deno.exit(2);
}

function pathOf(url: string): string {
  return url.slice(url.indexOf("/", url.indexOf("//") + 2));
}

const HOP = new Set(["connection", "keep-alive", "transfer-encoding"]);
const listen = { hostname: "127.0.0.1", port: Number(port), onListen() {} };

if (client === "fetch") {
  const http = Deno.createHttpClient({ allowHost: true });
  Deno.serve(listen, async (req) => {
    const headers = new Headers(req.headers);
    headers.delete("connection");
    const res = await fetch(upstream + pathOf(req.url), {
      method: req.method,
      headers,
      body: req.body,
      client: http,
    });
    return new Response(res.body, { status: res.status, headers: res.headers });
  });
} else {
  const http1 = createHttp1Upstream();
  const target = createUpstreamPool([upstream], systemClock).upstreams[0]!;
  const proxy = async (req: Request): Promise<Response> => {
    const headers: HeaderPairs = [];
    req.headers.forEach((v, k) => {
      if (k !== "connection") headers.push([k, v]);
    });
    const res = await http1.send(target, {
      method: req.method,
      pathAndQuery: pathOf(req.url),
      upstreamHeaders: headers,
      upstreamBody: req.body ?? undefined,
      connectTimeoutMs: 5_000,
      responseTimeoutMs: 60_000,
    });
    if (res instanceof Response) return res;
    return new Response(res.body, {
      status: res.status,
      headers: res.headers.filter(([k]) => !HOP.has(k)),
    });
  };
  if (client === "http1") Deno.serve(listen, proxy);
  else {
    const data = createDataApp(
      (req) => proxy(req),
      createLogger({ format: "text", level: "error" }),
      () => "-",
    );
    Deno.serve(listen, (req, info) => data.handle(req, info.remoteAddr.hostname, "http"));
  }
}
