/**
 * The WAF's CPU a request next to the bare own-client proxy's, thread by thread (issue 13): the
 * bare `Deno.serve` + own-client proxy (`bench_bare_proxy.ts http1`, what `bench:proxy` calls
 * `deno bare, own client`) and one WAF per checkout (`main.ts serve`, the benchmark sites of
 * `bench_proxy.ts`) in front of one nginx, measured in alternated wrk rounds (the order reversed
 * every round). Each round reports, per process, the CPU a request of the event loop (`main`),
 * the access-log writer (`worker-1`) and the other threads (V8's GC helpers, tokio), and the
 * context switches a request of the event loop (`cs main`: its sleeps and preemptions, which do
 * not depend on the machine's load as much as CPU time does). `--delay <ms>` paces every
 * connection as the half-rate phase of `bench_proxy.ts` does: the event loop at low concurrency.
 *
 * ```sh
 * deno run -A scripts/bench_gap.ts --trees /tmp/waf-a,. [--host off.bench] [--rounds 5]
 *                                  [--duration 5] [--connections 50] [--delay 10]
 * ```
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import {
  BENIGN,
  spawnBareProxy,
  startNginxUpstream,
  startWaf,
  wrk,
  wrkScript,
} from "./bench_proxy.ts";
import {
  ensure,
  freePort,
  loadAverage,
  median,
  stopAll,
  threadTicks,
  waitForPort,
} from "./bench_kit.ts";

/** Context switches so far (voluntary and not) of `pid`'s event loop. */
function switches(pid: number): number {
  try {
    const s = Deno.readTextFileSync(`/proc/${pid}/task/${pid}/status`);
    return Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(s)?.[1] ?? 0) +
      Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(s)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

interface Side {
  readonly name: string;
  readonly child: Deno.ChildProcess;
  readonly port: number;
  readonly results: Map<string, number[]>;
}

const THREADS = ["main", "worker-1", "other", "total", "cs main"];

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      trees: { type: "string", default: "." },
      host: { type: "string", default: "off.bench" },
      rounds: { type: "string", default: "5" },
      duration: { type: "string", default: "5" },
      connections: { type: "string", default: "50" },
      delay: { type: "string" },
    },
  });
  await ensure("wrk", "wrk");
  await ensure("nginx", "nginx-light");
  const delay = values.delay === undefined ? undefined : Number(values.delay);
  const opts = { threads: 2, connections: Number(values.connections), duration: 0 };
  const dir = await Deno.makeTempDir({ prefix: "waf-gap-" });
  const upPort = freePort();
  const nginx = await startNginxUpstream(dir, upPort);
  const upstream = `http://127.0.0.1:${upPort}`;
  const sides: Side[] = [];
  try {
    const barePort = freePort();
    const bare = spawnBareProxy(upstream, barePort, "http1");
    sides.push({ name: "bare own client", child: bare, port: barePort, results: new Map() });
    await waitForPort(barePort, "bare own-client proxy");
    const trees = values.trees.split(",").map((t) => resolve(t) + "/");
    for (const [i, root] of trees.entries()) {
      const port = freePort();
      const child = await startWaf(dir, upstream, port, freePort(), "1", [], root, {
        name: `waf-${i}`,
      });
      sides.push({ name: `waf ${root}`, child, port, results: new Map() });
    }
    const script = wrkScript(BENIGN, values.host, delay);
    for (const s of sides) {
      await wrk(dir, `http://127.0.0.1:${s.port}`, script, { ...opts, duration: 3 });
    }
    console.log(`load average before: ${loadAverage()}`);
    for (let r = 0; r < Number(values.rounds); r++) {
      for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
        const ticks = threadTicks(s.child.pid);
        const cs = switches(s.child.pid);
        const w = await wrk(dir, `http://127.0.0.1:${s.port}`, script, {
          ...opts,
          duration: Number(values.duration),
        });
        const after = threadTicks(s.child.pid);
        const per: Record<string, number> = { main: 0, "worker-1": 0, other: 0, total: 0 };
        for (const [name, t] of after) {
          const us = ((t - (ticks.get(name) ?? 0)) * 10_000) / Math.max(1, w.requests);
          const key = name === "main" || name === "worker-1" ? name : "other";
          per[key]! += us;
          per.total! += us;
        }
        per["cs main"] = (switches(s.child.pid) - cs) / Math.max(1, w.requests);
        for (const k of THREADS) {
          if (!s.results.has(k)) s.results.set(k, []);
          s.results.get(k)!.push(per[k]!);
        }
        console.log(
          `round ${r + 1} ${s.name}: ${w.rps.toFixed(0)} req/s, p99 ${
            w.p99.toFixed(2)
          } ms; µs CPU a ` +
            `request: main ${per.main!.toFixed(1)}, worker-1 ${per["worker-1"]!.toFixed(1)}, ` +
            `other ${per.other!.toFixed(1)}, total ${per.total!.toFixed(1)}; cs main ` +
            `${per["cs main"]!.toFixed(3)} (load ${loadAverage()})`,
        );
      }
    }
    console.log("medians (µs CPU a request; context switches of the event loop a request):");
    for (const s of sides) {
      console.log(
        `  ${s.name}: ` +
          THREADS.map((k) => `${k} ${median(s.results.get(k)!).toFixed(k === "cs main" ? 3 : 1)}`)
            .join(", "),
      );
    }
    console.log(`load average after: ${loadAverage()}`);
    return 0;
  } finally {
    await stopAll([...sides.map((s) => s.child), nginx], dir);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
