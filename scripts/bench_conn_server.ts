/**
 * The data listener's path from socket to app, prototypes side by side (issue 13): `Deno.serve`
 * direct, today's connection front + `Deno.serve` over loopback TCP, the front's pipe into
 * `Deno.serve` on a Unix-domain socket, and the front serving HTTP/1.1 itself
 * (`proto_conn_server.ts`). Each with a handler that answers at once (`hello`) and with the
 * bare own-client proxy in the Hono app (`proxy`, nginx upstream). All processes run at once;
 * wrk drives them in alternated rounds (the order reversed every round) and the CPU time each
 * process spent per request is read from /proc.
 *
 * ```sh
 * deno run -A scripts/bench_conn_server.ts [--rounds 3] [--duration 4] [--connections 50]
 *                                          [--threads 2] [--handlers hello,proxy]
 *                                          [--variants serve,front,unix,own]
 * ```
 */
import { parseArgs } from "node:util";
import { ensure, freePort, loadAverage, median, stopAll, waitForPort } from "./bench_kit.ts";
import { BENIGN, measured, startNginxUpstream, wrk, wrkScript } from "./bench_proxy.ts";
import { SERVER_V8_FLAGS } from "./server_flags.ts";

const ROOT = new URL("..", import.meta.url).pathname;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    rounds: { type: "string", default: "3" },
    duration: { type: "string", default: "4" },
    connections: { type: "string", default: "50" },
    threads: { type: "string", default: "2" },
    handlers: { type: "string", default: "hello,proxy" },
    variants: { type: "string", default: "serve,front,unix,own" },
  },
});
const opts = {
  duration: Number(values.duration),
  connections: Number(values.connections),
  threads: Number(values.threads),
};
await ensure("wrk", "wrk");
await ensure("nginx", "nginx-light");
const dir = await Deno.makeTempDir({ prefix: "waf-conn-" });
const children: Deno.ChildProcess[] = [];
const load = loadAverage;
try {
  const upPort = freePort();
  children.push(await startNginxUpstream(dir, upPort));
  const upstream = `http://127.0.0.1:${upPort}`;
  const targets: Array<{ name: string; handler: string; port: number; pid: number }> = [];
  for (const handler of values.handlers.split(",")) {
    for (const variant of values.variants.split(",")) {
      const port = freePort();
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          SERVER_V8_FLAGS,
          `${ROOT}scripts/proto_conn_server.ts`,
          variant,
          String(port),
          handler,
          upstream,
        ],
        stdout: "null",
        stderr: "inherit",
      }).spawn();
      children.push(child);
      await waitForPort(port, `${variant} ${handler}`);
      targets.push({ name: variant, handler, port, pid: child.pid });
    }
  }
  console.log(`load average before: ${load()}`);
  for (const handler of values.handlers.split(",")) {
    const group = targets.filter((t) => t.handler === handler);
    const script = handler === "hello"
      ? wrkScript([["GET", "/index.html", "", ""]], "on.bench")
      : wrkScript(BENIGN, "on.bench");
    for (const t of group) {
      await wrk(dir, `http://127.0.0.1:${t.port}`, script, { ...opts, duration: 2 });
    }
    const rps = new Map<string, number[]>(group.map((t) => [t.name, []]));
    const cpu = new Map<string, number[]>(group.map((t) => [t.name, []]));
    for (let round = 0; round < Number(values.rounds); round++) {
      const order = round % 2 === 0 ? group : [...group].reverse();
      const line: string[] = [];
      for (const t of order) {
        const r = await measured(t.pid, dir, `http://127.0.0.1:${t.port}`, script, opts);
        if (r.non2xx > 0) throw new Error(`${t.name} ${handler}: ${r.non2xx} non-2xx answers`);
        rps.get(t.name)!.push(r.rps);
        cpu.get(t.name)!.push(r.cpuUs!);
        line.push(`${t.name} ${r.rps.toFixed(0)} req/s ${r.cpuUs!.toFixed(1)} µs`);
      }
      console.log(`${handler} round ${round + 1} (load ${load()}): ${line.join(" | ")}`);
    }
    const base = group.find((t) => t.name === "front")?.name ?? group[0]!.name;
    const baseRps = median(rps.get(base)!);
    const baseCpu = median(cpu.get(base)!);
    console.log(`\n${handler}: medians of ${values.rounds} rounds (ratios against ${base})`);
    for (const t of group) {
      const r = median(rps.get(t.name)!);
      const c = median(cpu.get(t.name)!);
      console.log(
        `  ${t.name.padEnd(6)} ${r.toFixed(0).padStart(7)} req/s (${
          (r / baseRps * 100).toFixed(1)
        }%)  ${c.toFixed(1).padStart(6)} µs CPU/request (${(c / baseCpu * 100).toFixed(1)}%)`,
      );
    }
    console.log("");
  }
  console.log(`load average after: ${load()}`);
} finally {
  await stopAll(children, dir);
}
