/**
 * The floor for any Deno reverse proxy, started by `bench_proxy.ts` as a baseline in the same
 * run: `Deno.serve` plus `fetch` through one pooled `Deno.createHttpClient`, with only the
 * `connection` header dropped. No site lookup, inspection, deadlines or access log.
 *
 * ```sh
 * deno run -A scripts/bench_bare_proxy.ts <port> <upstream origin>
 * ```
 */
const [port, upstream] = Deno.args;
if (port === undefined || upstream === undefined) {
  console.error("usage: bench_bare_proxy.ts <port> <upstream origin>");
  Deno.exit(2);
}
const client = Deno.createHttpClient({ allowHost: true });
Deno.serve({ hostname: "127.0.0.1", port: Number(port), onListen() {} }, async (req) => {
  const url = req.url;
  const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
  const headers = new Headers(req.headers);
  headers.delete("connection");
  const res = await fetch(upstream + path, { method: req.method, headers, body: req.body, client });
  return new Response(res.body, { status: res.status, headers: res.headers });
});
