/**
 * A throw-away data plane for `deno task corpus --mode http`: a local upstream that answers
 * 200 to everything, and a WAF (real `startServer`, temporary data directory) with one site
 * for `--host` in front of it. Prints the corpus command to run, then serves until Ctrl-C.
 *
 * ```sh
 * deno task corpus:target [--host corpus.test] [--level balanced] [--port 8099]
 * ```
 */
import { parseArgs } from "node:util";
import { startServer } from "../app/server.ts";
import { systemClock } from "../mod/core/clock.ts";
import { validateConfig } from "../mod/config/config.ts";
import { createLogger } from "../mod/core/logger.ts";
import { systemRandom } from "../mod/core/random.ts";
import { siteInputSchema } from "../mod/data_plane/site_schema.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    host: { type: "string", default: "corpus.test" },
    level: { type: "string", default: "balanced" },
    port: { type: "string", default: "8099" },
  },
});

const upstream = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: () => {} },
  () => new Response("ok\n"),
);
const dir = await Deno.makeTempDir({ prefix: "waf-corpus-" });
const config = validateConfig({
  server: {
    data: { listen: `127.0.0.1:${values.port}` },
    management: { listen: "127.0.0.1:0" },
  },
  storage: { access_logs: { queue_size: 100_000 } },
  logging: { level: "warn" },
});
if (config.kind !== "ok") throw new Error(JSON.stringify(config.problems));
const server = await startServer({ config: config.config, dataDir: dir }, {
  clock: systemClock,
  random: systemRandom,
  logger: createLogger({ format: "text", level: "warn" }),
  env: {},
});
server.dataPlane.sites.create(
  siteInputSchema.parse({
    name: "corpus",
    hosts: [values.host],
    upstreams: [`http://127.0.0.1:${upstream.addr.port}`],
    level: values.level,
    max_body_bytes: 64 * 1024 * 1024,
  }),
  { actor: { type: "cli", name: "corpus_target" } },
);
console.log(
  `ready: deno task corpus --mode http --target ${server.dataUrl} --host ${values.host} --level ${values.level}`,
);
const stop = async () => {
  await server.shutdown();
  await upstream.shutdown();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
