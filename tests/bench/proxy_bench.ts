/**
 * The connector's own cost per request, without sockets: the upstream client (and `fetch`, for
 * the baseline) is replaced by a stub that answers at once, so what remains is the work the proxy adds (site match, headers, engine,
 * access-log record). Compared with a minimal pass-through handler measured the same way.
 *
 * ```sh
 * deno bench -A tests/bench/proxy_bench.ts
 * ```
 */
import { createAccessLogRepo } from "../../db/access_log_repo.ts";
import { lineFormat } from "../../mod/access_log/lines.ts";
import { openStore } from "../../db/store.ts";
import { createAccessLog } from "../../mod/access_log/access_log.ts";
import { systemClock } from "../../mod/core/clock.ts";
import { createLogger } from "../../mod/core/logger.ts";
import { compilePolicy, type Policy } from "../../mod/data_plane/policy.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { siteInputSchema } from "../../mod/data_plane/site_schema.ts";
import { createTraceIds } from "../../mod/data_plane/trace_ids.ts";
import { createProxy } from "../../routes/proxy/proxy.ts";
import type { UpstreamClient } from "../../net/upstream/upstream_client.ts";

const realFetch = globalThis.fetch;
globalThis.fetch = (() =>
  Promise.resolve(
    new Response("hello from the upstream\n", {
      headers: { "content-type": "text/plain", "content-length": "24", server: "stub" },
    }),
  )) as typeof fetch;

const BODY = new TextEncoder().encode("hello from the upstream\n");
const stubUpstream: UpstreamClient = {
  send: () =>
    Promise.resolve({
      status: 200,
      statusText: "OK",
      headers: [["content-type", "text/plain"], ["content-length", "24"], ["server", "stub"]],
      contentLength: 24,
      body: BODY.slice(),
    }),
  close() {},
};

const dir = await Deno.makeTempDir();
const db = openStore(`${dir}/waf.db`, { now: systemClock.now() });
const site = (name: string, mode: string) => ({
  ...siteInputSchema.parse({
    name,
    hosts: [`${name}.bench`],
    upstreams: ["http://127.0.0.1:9"],
    mode,
  }),
  id: name,
  tls: null,
  created_at: 0,
  updated_at: 0,
});
const compiled = compilePolicy([site("off", "off"), site("on", "block")], systemClock, 1);
// Pretend the upstream answered recently, so the cold-connect dial is skipped as under load.
for (const s of compiled.sites) s.pool.upstreams[0]!.lastOkAt = Date.now() + 3_600_000;
const policy: Policy = { current: compiled, rebuild: () => compiled, coalesce: (w) => w() };
const accessLog = createAccessLog(
  { queueSize: 1_000_000, batchSize: 500, retentionDays: 1, maxRecords: 1_000_000 },
  {
    repo: createAccessLogRepo(db, lineFormat),
    writer: {
      writeLines: (_, o) => Promise.resolve(o.count),
      prune: () => Promise.resolve(0),
      trimmed: () => 0,
      close: () => Promise.resolve(),
    },
    clock: systemClock,
    logger: createLogger({ format: "text", level: "error" }),
  },
);
const proxy = createProxy({
  policy,
  accessLog,
  clock: systemClock,
  logger: createLogger({ format: "text", level: "error" }),
  traceId: createTraceIds(systemRandom, systemClock),
  upstream: stubUpstream,
});

const HEADERS = {
  "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36",
  accept: "text/html,application/json;q=0.9,*/*;q=0.8",
  cookie: "session=4f2a9c1e7b; theme=dark",
};

function request(host: string): Request {
  return new Request("http://127.0.0.1:8080/products?id=42&sort=price&page=2", {
    headers: { ...HEADERS, host },
  });
}

async function drain(res: Response): Promise<void> {
  await res.arrayBuffer();
  if (accessLog.stats().queued > 100_000) await accessLog.flush();
}

Deno.bench("minimal pass-through (baseline)", { group: "proxy", baseline: true }, async () => {
  const req = request("off.bench");
  const headers = new Headers(req.headers);
  headers.delete("connection");
  const res = await fetch("http://127.0.0.1:9/products?id=42", { headers });
  await drain(new Response(res.body, { status: res.status, headers: res.headers }));
});

Deno.bench("connector, protection off", { group: "proxy" }, async () => {
  await drain(await proxy.handle(request("off.bench"), "127.0.0.1", "http"));
});

Deno.bench("connector, balanced/block (benign request)", { group: "proxy" }, async () => {
  await drain(await proxy.handle(request("on.bench"), "127.0.0.1", "http"));
});

addEventListener("unload", () => {
  globalThis.fetch = realFetch;
  proxy.close();
  db.close();
});
