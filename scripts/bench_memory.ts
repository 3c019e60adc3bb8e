/**
 * What the data plane's memory does after a burst of hostile traffic: a WAF in this process (real
 * `startServer`, one site before a loopback upstream) takes `--duration` seconds of wrk sending a
 * fuzz-like mix (attack payloads in paths, queries, form and JSON bodies up to ~100 KB, random
 * header names and values up to 4 KB), then idles, printing V8's heap and the process's RSS after
 * the load, after 5, 10 and 20 s idle, and after a forced full GC (live data only).
 *
 * Run it with the shipped V8 flags and with `--no-memory-reducer` added to compare (see
 * docs/reliability.md; `bench:memory-flags` compares the flags across processes, with the latency
 * they cost); `--expose-gc` is needed for the last line.
 *
 * ```sh
 * deno run -A --v8-flags=--max-semi-space-size=4,--no-allocation-site-pretenuring,--heap-growing-percent=25,--expose-gc \
 *   scripts/bench_memory.ts [--duration 30] [--connections 50]
 * ```
 */
import { parseArgs } from "node:util";
import { ensure } from "./bench_kit.ts";
import { fuzzLua } from "./fuzz_mix.ts";
import { startServer } from "../app/server.ts";
import { systemClock } from "../mod/core/clock.ts";
import { validateConfig } from "../mod/config/config.ts";
import { createLogger } from "../mod/core/logger.ts";
import { systemRandom } from "../mod/core/random.ts";
import { siteInputSchema } from "../mod/data_plane/site_schema.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    duration: { type: "string", default: "30" },
    connections: { type: "string", default: "50" },
  },
});

await ensure("wrk", "wrk");
const upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
  await r.body?.cancel();
  return new Response("ok\n");
});
const dir = await Deno.makeTempDir({ prefix: "waf-memory-" });
const config = validateConfig({
  server: { data: { listen: "127.0.0.1:0" }, management: { listen: "127.0.0.1:0" } },
  logging: { level: "error" },
});
if (config.kind !== "ok") throw new Error(JSON.stringify(config.problems));
const server = await startServer({ config: config.config, dataDir: dir }, {
  clock: systemClock,
  random: systemRandom,
  logger: createLogger({ format: "text", level: "error" }),
  env: {},
});
server.dataPlane.sites.create(
  siteInputSchema.parse({
    name: "fuzz",
    hosts: ["fuzz.test"],
    upstreams: [`http://127.0.0.1:${upstream.addr.port}`],
    max_body_bytes: 64 << 20,
  }),
  { actor: { type: "cli", name: "bench_memory" } },
);

const mb = (n: number) => Math.round(n / 1_048_576);
const show = (label: string) => {
  const m = Deno.memoryUsage();
  console.log(
    `${label.padEnd(18)} rss ${mb(m.rss)} MB, heap ${mb(m.heapUsed)} of ${mb(m.heapTotal)} MB`,
  );
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

show("start");
const script = `${dir}/fuzz.lua`;
await Deno.writeTextFile(script, fuzzLua("fuzz.test"));
const out = await new Deno.Command("wrk", {
  args: ["-t1", `-c${values.connections}`, `-d${values.duration}s`, "-s", script, server.dataUrl],
  stdout: "piped",
}).output();
const summary = new TextDecoder().decode(out.stdout).split("\n")
  .filter((l) => /requests in|Requests\/sec/.test(l)).map((l) => l.trim());
console.log(`load: ${summary.join(", ")}`);
show("after the load");
for (const [wait, label] of [[5, "5 s idle"], [5, "10 s idle"], [10, "20 s idle"]] as const) {
  await sleep(wait * 1000);
  show(label);
}
const gc = (globalThis as { gc?: () => void }).gc;
if (gc) {
  gc();
  await sleep(500);
  show("after a full GC");
}
await server.shutdown();
await upstream.shutdown();
await Deno.remove(dir, { recursive: true });
