/**
 * The memory bound and its latency cost, in one run (issue #22, item 7, "memory after the fuzz
 * run"): three `waf serve` processes that differ only in V8's memory reducer take the same burst of
 * the fuzz mix at the same moment, then idle; each one's resident memory is read after the burst
 * and after the idle spell, and then each gets the same paced benign load one after the other (the
 * case the reducer was disabled for: the first traffic after an idle spell) and its p99 is printed.
 *
 * ```sh
 * deno run -A scripts/bench_memory_flags.ts [--burst 15] [--idle 65] [--paced 8] [--rate 1000]
 *                                           [--reverse]
 * ```
 */
import { parseArgs } from "node:util";
import { ensure, freePort, stopAll } from "./bench_kit.ts";
import { BENIGN, startNginxUpstream, startWaf, wrk, wrkScript } from "./bench_proxy.ts";
import { fuzzLua } from "./fuzz_mix.ts";

/** Later `--v8-flags` win over the shipped ones that `startWaf` passes first. */
const VARIANTS: ReadonlyArray<readonly [string, string[]]> = [
  ["no memory reducer (before)", ["--v8-flags=--no-memory-reducer"]],
  ["memory reducer on (shipped)", []],
  [
    "reducer for large heaps only",
    ["--v8-flags=--memory-reducer,--no-memory-reducer-for-small-heaps"],
  ],
];

function rssMb(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      burst: { type: "string", default: "15" },
      idle: { type: "string", default: "65" },
      paced: { type: "string", default: "8" },
      rate: { type: "string", default: "1000" },
      /** Paced runs in the reverse order (the first after the idle spell is the coldest). */
      reverse: { type: "boolean", default: false },
    },
  });
  await ensure("wrk", "wrk");
  await ensure("nginx", "nginx-light");
  const dir = await Deno.makeTempDir({ prefix: "waf-bench-memflags-" });
  const children: Deno.ChildProcess[] = [];
  try {
    const upPort = freePort();
    children.push(await startNginxUpstream(dir, upPort));
    const servers = [];
    for (const [i, [name, flags]] of VARIANTS.entries()) {
      const port = freePort();
      const child = await startWaf(
        dir,
        `http://127.0.0.1:${upPort}`,
        port,
        freePort(),
        "1",
        flags,
        undefined,
        { name: `waf${i}` },
      );
      children.push(child);
      servers.push({ name, port, child, start: rssMb(child.pid) });
    }
    await Deno.writeTextFile(`${dir}/fuzz.lua`, fuzzLua("off.bench"));
    // The same burst for all three at the same moment.
    const bursts = await Promise.all(servers.map((s) =>
      new Deno.Command("wrk", {
        args: [
          "-t1",
          "-c16",
          `-d${values.burst}s`,
          "-s",
          `${dir}/fuzz.lua`,
          `http://127.0.0.1:${s.port}`,
        ],
        stdout: "piped",
      }).output()
    ));
    const burstSummary = bursts.map((b) => {
      const out = new TextDecoder().decode(b.stdout);
      const n = /(\d+) requests in/.exec(out)?.[1] ?? "?";
      const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? "0";
      return `${n} requests (${non2xx} not 2xx)`;
    });
    const afterBurst = servers.map((s) => rssMb(s.child.pid));
    await sleep(Number(values.idle) * 1000);
    const afterIdle = servers.map((s) => rssMb(s.child.pid));
    const connections = 10;
    const delayMs = (connections * 1000) / Number(values.rate);
    const opts = { threads: 1, connections, duration: Number(values.paced) };
    const paced: Array<Awaited<ReturnType<typeof wrk>> & { rss: number }> = [];
    const order = values.reverse ? [...servers].reverse() : servers;
    const byServer = new Map<unknown, Awaited<ReturnType<typeof wrk>> & { rss: number }>();
    for (const s of order) {
      const r = await wrk(
        dir,
        `http://127.0.0.1:${s.port}`,
        wrkScript(BENIGN, "on.bench", delayMs),
        opts,
      );
      byServer.set(s, { ...r, rss: rssMb(s.child.pid) });
    }
    for (const s of servers) paced.push(byServer.get(s)!);
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    console.log(
      `burst ${values.burst} s of the fuzz mix (16 connections each, all three at once), ` +
        `${values.idle} s idle, then ${values.paced} s paced at ~${values.rate} req/s (benign, 10 connections), one after the other`,
    );
    servers.forEach((s, i) => {
      const p = paced[i]!;
      console.log(
        `${s.name.padEnd(32)} burst ${burstSummary[i]}; RSS start ${
          s.start.toFixed(0)
        } MB, after burst ${afterBurst[i]!.toFixed(0)} MB, after idle ${
          afterIdle[i]!.toFixed(0)
        } MB, after paced ${p.rss.toFixed(0)} MB; ` +
          `paced ${p.rps.toFixed(0)} req/s p50 ${p.p50.toFixed(2)} ms p99 ${p.p99.toFixed(2)} ms`,
      );
    });
    console.log(`load average at the end: ${load}`);
    return 0;
  } finally {
    await stopAll(children, dir);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
