/**
 * The own upstream client as an A/B under wrk: each checkout's bare proxy
 * (`scripts/bench_bare_proxy.ts http1`: `Deno.serve` plus `net/upstream/http1_client.ts`, nothing
 * else) and the `fetch` bare proxy (the first side's tree; the baseline of issue 13's "own client
 * >= 2x fetch" target), all in front of one nginx upstream, measured in alternated wrk rounds.
 * Each round reports the proxy process's req/s and CPU time per request; the medians, and each
 * side's req/s over the `fetch` proxy's in the same rounds, close the run.
 *
 * ```sh
 * git archive main | (mkdir -p /tmp/client-a && tar -x -C /tmp/client-a)
 * deno run -A scripts/bench_client_ab.ts --sides /tmp/client-a,. [--rounds 8] [--duration 5]
 *                                         [--mix benign] [--connections 50] [--no-fetch]
 * ```
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import {
  ATTACK,
  type BareClient,
  BENIGN,
  measured,
  spawnBareProxy,
  startNginxUpstream,
  wrkScript,
} from "./bench_proxy.ts";
import { freePort, loadAverage, median, stopAll, waitForPort } from "./bench_kit.ts";

interface Side {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      sides: { type: "string", default: "." },
      rounds: { type: "string", default: "8" },
      duration: { type: "string", default: "5" },
      connections: { type: "string", default: "50" },
      mix: { type: "string", default: "benign" },
      "no-fetch": { type: "boolean", default: false },
    },
  });
  const roots = values.sides!.split(",").map((s) => resolve(s));
  const rounds = Number(values.rounds);
  const opts = {
    threads: 1,
    connections: Number(values.connections),
    duration: Number(values.duration),
  };
  const dir = await Deno.makeTempDir({ prefix: "bench_client_ab_" });
  const children: Deno.ChildProcess[] = [];
  try {
    const upPort = freePort();
    children.push(await startNginxUpstream(dir, upPort));
    const upstream = `http://127.0.0.1:${upPort}`;
    const sides: Side[] = [];
    const add = async (name: string, root: string, client: BareClient) => {
      const port = freePort();
      const child = spawnBareProxy(upstream, port, client, `${root}/`);
      children.push(child);
      await waitForPort(port, name);
      sides.push({ name, port, pid: child.pid });
    };
    if (!values["no-fetch"]) await add("fetch", roots[0]!, "fetch");
    for (const [i, root] of roots.entries()) {
      await add(`${String.fromCharCode(65 + i)} http1 (${root})`, root, "http1");
    }
    const script = wrkScript(values.mix === "attack" ? ATTACK : BENIGN, "on.bench");
    // Warm-up: every side's JIT and pool.
    for (const s of sides) {
      await measured(s.pid, dir, `http://127.0.0.1:${s.port}`, script, { ...opts, duration: 2 });
    }
    console.log(`load before: ${loadAverage()}`);
    const rps = new Map<string, number[]>(sides.map((s) => [s.name, []]));
    const cpu = new Map<string, number[]>(sides.map((s) => [s.name, []]));
    const vsFetch = new Map<string, number[]>(sides.map((s) => [s.name, []]));
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      const round = new Map<string, number>();
      for (const s of order) {
        const res = await measured(s.pid, dir, `http://127.0.0.1:${s.port}`, script, opts);
        rps.get(s.name)!.push(res.rps);
        cpu.get(s.name)!.push(res.cpuUs!);
        round.set(s.name, res.rps);
        console.log(
          `round ${r + 1} ${s.name}: ${res.rps.toFixed(0)} req/s, ${res.cpuUs!.toFixed(1)} µs/req`,
        );
      }
      const base = round.get("fetch");
      if (base !== undefined) {
        for (const s of sides) vsFetch.get(s.name)!.push(round.get(s.name)! / base);
      }
    }
    console.log(`load after: ${loadAverage()}`);
    const names = sides.map((s) => s.name);
    const a = names.find((n) => n.startsWith("A "));
    for (const n of names) {
      const lower = a === undefined || n === a
        ? ""
        : `, CPU lower than A in ${
          cpu.get(n)!.filter((v, i) => v < cpu.get(a)![i]!).length
        } of ${rounds}, ${
          (median(cpu.get(n)!.map((v, i) => v / cpu.get(a)![i]!)) * 100).toFixed(1)
        }% of A's CPU (median of the rounds' ratios)`;
      const ratio = vsFetch.get(n)!.length > 0
        ? `, ${median(vsFetch.get(n)!).toFixed(2)}x fetch (median of the rounds' ratios)`
        : "";
      console.log(
        `median ${n}: ${median(rps.get(n)!).toFixed(0)} req/s, ${
          median(cpu.get(n)!).toFixed(1)
        } µs/req${ratio}${lower}`,
      );
    }
  } finally {
    await stopAll(children, dir);
  }
}

if (import.meta.main) await main();
