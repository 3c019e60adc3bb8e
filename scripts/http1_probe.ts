/**
 * What Deno's HTTP server (hyper) does with edge-case HTTP/1.1 requests: each raw request is
 * sent on its own connection to a server that echoes what its handler saw (method, URL,
 * headers, body), and the status and echo are printed one line per case. Run it against
 * `Deno.serve` and against the data plane's own HTTP/1.1 server to compare them:
 *
 * ```sh
 * deno run -A scripts/http1_probe.ts [deno|own] [--json]
 * ```
 */
import { PROBE_CASES, probeAll } from "../tests/_helpers/http1_probe_cases.ts";
import { serveHttp1 } from "../net/http1_server.ts";

const which = Deno.args[0] ?? "deno";
const echo = async (req: Request): Promise<Response> => {
  const body = req.body ? (await req.bytes()).length : -1;
  const headers: string[] = [];
  req.headers.forEach((v, k) => headers.push(`${k}=${v}`));
  return Response.json({ method: req.method, url: req.url, headers, body });
};
let port: number;
let stop: () => Promise<void>;
if (which === "deno") {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, echo);
  port = server.addr.port;
  stop = () => server.shutdown();
} else {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  port = (listener.addr as Deno.NetAddr).port;
  const server = serveHttp1(listener, (req) => echo(req));
  stop = () => server.close();
}
const results = await probeAll(port, PROBE_CASES);
if (Deno.args.includes("--json")) console.log(JSON.stringify(results, null, 1));
else for (const r of results) console.log(`${r.status}\t${r.name}\t${r.echo}`);
await stop();
