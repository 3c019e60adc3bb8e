/**
 * What the data plane's memory does after a burst of hostile traffic: a WAF in this process (real
 * `startServer`, one site before a loopback upstream) takes `--duration` seconds of wrk sending a
 * fuzz-like mix (attack payloads in paths, queries, form and JSON bodies up to ~100 KB, random
 * header names and values up to 4 KB), then idles, printing V8's heap and the process's RSS after
 * the load, after 5, 10 and 20 s idle, and after a forced full GC (live data only).
 *
 * Run it with the shipped V8 flags and without `--no-memory-reducer` to compare (see
 * docs/reliability.md); `--expose-gc` is needed for the last line.
 *
 * ```sh
 * deno run -A --v8-flags=--max-semi-space-size=4,--no-memory-reducer,--expose-gc \
 *   scripts/bench_memory.ts [--duration 30] [--connections 50]
 * ```
 */
import { parseArgs } from "node:util";
import { ensure } from "./bench_kit.ts";
import { startServer } from "../app/server.ts";
import { systemClock } from "../mod/core/clock.ts";
import { validateConfig } from "../mod/config/config.ts";
import { createLogger } from "../mod/core/logger.ts";
import { systemRandom } from "../mod/core/random.ts";
import { siteInputSchema } from "../mod/data_plane/site_schema.ts";

const FUZZ_LUA = `
math.randomseed(os.time())
local payloads = {"' OR 1=1--", "<script>alert(1)</script>", "../../etc/passwd",
  "\${jndi:ldap://x/a}", "{{7*7}}", "; cat /etc/passwd", "%00%ff%fe", "\\"><img src=x onerror=alert(1)>"}
request = function()
  local p = payloads[math.random(#payloads)]
  local kind = math.random(0, 3)
  local headers = {["Host"] = "fuzz.test", ["X-R" .. math.random(1, 1000)] = string.rep("v", math.random(1, 4000))}
  local path = "/p" .. math.random(1, 100000) .. "?q=" .. p .. "&r=" .. math.random()
  if kind == 0 then
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    return wrk.format("POST", path, headers, string.rep("a=" .. p .. "&", math.random(1, 3000)))
  elseif kind == 1 then
    headers["Content-Type"] = "application/json"
    return wrk.format("POST", path, headers, '{"k":"' .. string.rep(p, math.random(1, 2000)) .. '"}')
  end
  return wrk.format("GET", path, headers)
end
`;

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
await Deno.writeTextFile(script, FUZZ_LUA);
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
