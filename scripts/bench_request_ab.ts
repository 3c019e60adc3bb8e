/**
 * The WAF's request path as an A/B inside one process, so both sides see the same machine load:
 * two checkouts' servers (`startServer`, the default protection, one site in block mode in front
 * of an in-process upstream) get the same benign requests straight into their data-plane
 * handlers, alternating in rounds; each round reports the process's CPU time (every thread: the
 * access-log writer too) per request. Socket and wrk costs stay out, which is what makes small
 * differences visible on a loaded machine.
 *
 * ```sh
 * git archive main | (mkdir -p /tmp/waf-a && tar -x -C /tmp/waf-a)
 * deno run -A scripts/bench_request_ab.ts --a /tmp/waf-a [--b .] [--requests 20000] [--rounds 6]
 *                                          [--bodies]
 * ```
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { BENIGN } from "./bench_proxy.ts";
import { alternate } from "./bench_kit.ts";

interface Side {
  readonly name: string;
  handle(req: Request): Promise<Response>;
  close(): Promise<void>;
}

const UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36";
const INFO = { remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 40000 } };

async function start(name: string, root: string, upstream: string): Promise<Side> {
  const url = (p: string) => new URL(p, `file://${root}`).href;
  const { startServer } = await import(url("app/server.ts"));
  const { validateConfig } = await import(url("mod/config/config.ts"));
  const { systemClock } = await import(url("mod/core/clock.ts"));
  const { systemRandom } = await import(url("mod/core/random.ts"));
  const { createLogger } = await import(url("mod/core/logger.ts"));
  const { siteInputSchema } = await import(url("mod/data_plane/site_schema.ts"));
  const dir = await Deno.makeTempDir({ prefix: `waf-req-ab-${name}-` });
  const config = validateConfig({
    server: { data: { listen: "127.0.0.1:0" }, management: { listen: "127.0.0.1:0" } },
    logging: { level: "error" },
  });
  const server = await startServer({ config: config.config, dataDir: dir }, {
    clock: systemClock,
    random: systemRandom,
    logger: createLogger({ format: "text", level: "error" }),
    env: {},
  });
  server.dataPlane.sites.create(
    siteInputSchema.parse({ name: "on", hosts: ["on.bench"], upstreams: [upstream] }),
    { actor: { type: "cli", name: "bench_request_ab" } },
  );
  return {
    name,
    handle: (req) => server.dataPlane.handler(req, INFO),
    async close() {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** The benign mix's requests (`bodies`: its POSTs with their bodies too, else its GETs). */
function requests(bodies: boolean): Array<() => Request> {
  return BENIGN.filter(([method]) => bodies || method === "GET").map(
    ([method, path, type, body]) => () =>
      new Request(`http://on.bench${path}`, {
        method,
        headers: {
          host: "on.bench",
          "user-agent": UA,
          accept: "text/html,application/json;q=0.9,*/*;q=0.8",
          cookie: "session=4f2a9c1e7b; theme=dark",
          ...(type ? { "content-type": type } : {}),
        },
        body: body || undefined,
      }),
  );
}

/** `count` requests, `concurrency` at a time; the CPU µs per request. */
async function round(
  side: Side,
  count: number,
  concurrency: number,
  bodies: boolean,
): Promise<number> {
  const make = requests(bodies);
  let next = 0;
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const res = await side.handle(make[next++ % make.length]!());
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${side.name}: status ${res.status}`);
    }
  }));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      a: { type: "string" },
      b: { type: "string", default: "." },
      requests: { type: "string", default: "20000" },
      rounds: { type: "string", default: "6" },
      concurrency: { type: "string", default: "16" },
      /** The whole benign mix, its two POSTs with bodies too (without: its four GETs). */
      bodies: { type: "boolean", default: false },
    },
  });
  if (values.a === undefined) {
    console.error("usage: bench_request_ab.ts --a <checkout> [--b <checkout>]");
    return 2;
  }
  const body = new TextEncoder().encode("hello from the upstream\n");
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(body, { headers: { "content-type": "text/plain" } }),
  );
  const origin = `http://127.0.0.1:${upstream.addr.port}`;
  const sides = [
    await start("A", resolve(values.a) + "/", origin),
    await start("B", resolve(values.b) + "/", origin),
  ];
  const count = Number(values.requests);
  const concurrency = Number(values.concurrency);
  try {
    const bodies = values.bodies;
    for (const s of sides) await round(s, 3000, concurrency, bodies);
    await alternate(
      sides,
      Number(values.rounds),
      "µs CPU a request",
      (s) => round(s, count, concurrency, bodies),
    );
  } finally {
    for (const s of sides) await s.close();
    await upstream.shutdown();
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
