/**
 * The WAF's latency tail against its own garbage collection, request by request: wrk reports only
 * percentiles, so `latency_recorder.c` (compiled here with `cc`) paces the benign GETs over
 * keep-alive connections and records every request's time and latency, while the WAF (`main.ts
 * serve` from each checkout in `--trees`, a fresh one per run, the benchmark's sites and flags)
 * prints V8's `--trace-gc`. A forced `gc()` at start, timed on the wall clock, maps V8's
 * "ms since start" to wall time. Per run: the percentiles, the old generation's growth (MB a
 * second, between mark-compacts), the mark-compacts, the share of the requests in flight in a
 * mark-compact's window (from the start of its marking to 5 ms after its final pause) with their
 * median latency, and the share of the slowest 1 % among them. Trees alternate between rounds.
 * Findings: docs/bench/2026-11-26-second-session-tail.md.
 *
 * ```sh
 * deno run -A scripts/bench_tail.ts [--trees /path/a,/path/b] [--rounds 3] [--rate 4000]
 *                                   [--seconds 15] [--connections 50] [--mode open|closed|closedrand]
 * ```
 */
import { parseArgs } from "node:util";
import { BENIGN, startNginxUpstream, startWaf, wrk, wrkScript } from "./bench_proxy.ts";
import { ensure, freePort, loadAverage, median, run, stopAll } from "./bench_kit.ts";
import { SERVER_V8_FLAGS } from "./server_flags.ts";

const ROOT = new URL("..", import.meta.url).pathname;

interface GcEvent {
  /** Wall time (ms) the collection ended. */
  end: number;
  pauseMs: number;
  kind: "scavenge" | "mark-compact";
  /** Heap size after it (MB). */
  afterMb: number;
  /** A mark-compact's marking, from its start to its final pause (ms). */
  markingMs: number;
}

/** The main isolate's collections from a `--trace-gc` log, on the wall clock. */
export function parseGcTrace(text: string): GcEvent[] {
  const anchor = /ANCHOR \S+ (\S+)/.exec(text);
  const forced = /\s(\d+) ms: Mark-Compact .*testing/.exec(text);
  if (!anchor || !forced) throw new Error("no gc() anchor in the trace");
  const offset = Number(anchor[1]) - Number(forced[1]);
  // Workers (the access-log writer) print their own lines; the main isolate prints the most.
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^\[\d+:(0x[0-9a-f]+)/gm)) {
    counts.set(m[1]!, (counts.get(m[1]!) ?? 0) + 1);
  }
  const main = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
  const events: GcEvent[] = [];
  const line =
    /^\[\d+:(0x[0-9a-f]+)\]\s+(\d+) ms: (Scavenge|Incremental Mark-Compact|Mark-Compact) [\d.]+ \([\d.]+\) -> ([\d.]+) .*?MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/(.*)$/gm;
  for (const m of text.matchAll(line)) {
    if (m[1] !== main || m[3] === "Mark-Compact" && /testing/.test(m[6]!)) continue;
    const marking = /walltime since start of marking (\d+) ms/.exec(m[6]!);
    events.push({
      end: Number(m[2]) + offset,
      pauseMs: Number(m[5]),
      kind: m[3] === "Scavenge" ? "scavenge" : "mark-compact",
      afterMb: Number(m[4]),
      markingMs: marking ? Number(marking[1]) : 0,
    });
  }
  return events;
}

interface Request {
  readonly at: number;
  readonly latency: number;
}

/** What one recorded run says about the tail and the mark-compacts (times in ms). */
export function tailReport(requests: readonly Request[], gc: readonly GcEvent[]) {
  const sorted = requests.map((r) => r.latency).sort((a, b) => a - b);
  const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  const from = Math.min(...requests.map((r) => r.at));
  const to = Math.max(...requests.map((r) => r.at + r.latency));
  const inRun = gc.filter((e) => e.end >= from && e.end <= to + 50);
  const windows = inRun.filter((e) => e.kind === "mark-compact").map((
    e,
  ) => [e.end - e.pauseMs - e.markingMs, e.end + 5] as const);
  const inWindow = (r: Request) => windows.some(([a, b]) => r.at < b && r.at + r.latency > a);
  const held = requests.filter(inWindow);
  const p99 = pct(0.99);
  const slow = requests.filter((r) => r.latency >= p99);
  // Old-generation growth: the heap after each scavenge, between two mark-compacts.
  const rates: number[] = [];
  let stretch: GcEvent[] = [];
  for (const e of [...inRun, { kind: "mark-compact" } as GcEvent]) {
    if (e.kind === "scavenge") {
      stretch.push(e);
      continue;
    }
    if (stretch.length > 5) {
      const [a, b] = [stretch[0]!, stretch[stretch.length - 1]!];
      rates.push((b.afterMb - a.afterMb) / ((b.end - a.end) / 1000));
    }
    stretch = [];
  }
  return {
    requests: requests.length,
    rps: requests.length / ((to - from) / 1000),
    p50: pct(0.5),
    p90: pct(0.9),
    p99,
    markCompacts: windows.length,
    oldGrowthMbPerS: rates.length ? median(rates) : NaN,
    heldShare: held.length / requests.length,
    heldP50: held.length ? median(held.map((r) => r.latency)) : NaN,
    slowestInWindows: slow.filter(inWindow).length / Math.max(1, slow.length),
  };
}

async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      trees: { type: "string", default: ROOT },
      rounds: { type: "string", default: "3" },
      rate: { type: "string", default: "4000" },
      seconds: { type: "string", default: "15" },
      connections: { type: "string", default: "50" },
      mode: { type: "string", default: "open" },
    },
  });
  await ensure("nginx", "nginx-light");
  await ensure("wrk", "wrk");
  const dir = await Deno.makeTempDir({ prefix: "waf-tail-" });
  const children: Deno.ChildProcess[] = [];
  try {
    const recorder = `${dir}/latency_recorder`;
    const cc = await run("cc", ["-O2", "-o", recorder, `${ROOT}scripts/latency_recorder.c`]);
    if (cc.code !== 0) throw new Error("cc could not build scripts/latency_recorder.c");
    await Deno.writeTextFile(
      `${dir}/anchor.js`,
      "const t = performance.timeOrigin + performance.now(); globalThis.gc(); " +
        "console.log(`ANCHOR ${t} ${performance.timeOrigin + performance.now()}`);\n",
    );
    const upstreamPort = freePort();
    children.push(await startNginxUpstream(dir, upstreamPort));
    const upstream = `http://127.0.0.1:${upstreamPort}`;
    const trees = values.trees.split(",").map((t) => t.endsWith("/") ? t : `${t}/`);
    const connections = Number(values.connections);
    const cycleUs = Math.round((connections * 1e6) / Number(values.rate));
    console.log(`load average at the start: ${loadAverage()}`);
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
        const port = freePort();
        const trace = `${dir}/gc.txt`;
        const waf = await startWaf(
          dir,
          upstream,
          port,
          freePort(),
          "1",
          [
            `--preload=${dir}/anchor.js`,
          ],
          tree,
          {
            name: `waf-${round}-${trees.indexOf(tree)}`,
            v8Flags: `${SERVER_V8_FLAGS},--trace-gc,--expose-gc`,
            stdoutFile: trace,
          },
        );
        const url = `http://127.0.0.1:${port}`;
        await wrk(dir, url, wrkScript(BENIGN, "on.bench"), {
          threads: 2,
          connections: 50,
          duration: 3,
        });
        const out = `${dir}/latencies.txt`;
        const r = await run(recorder, [
          "127.0.0.1",
          String(port),
          "on.bench",
          String(connections),
          values.seconds,
          String(cycleUs),
          values.mode,
          out,
        ]);
        if (r.code !== 0) throw new Error("the recorder failed");
        await stopAll([waf], `${dir}/none`);
        const requests = (await Deno.readTextFile(out)).trim().split("\n").map((l) => {
          const [at, latency] = l.split(" ").map(Number);
          return { at: at! / 1000, latency: latency! / 1000 };
        });
        const t = tailReport(requests, parseGcTrace(await Deno.readTextFile(trace)));
        const f = (n: number, d = 2) => Number.isFinite(n) ? n.toFixed(d) : "n/a";
        console.log(
          `round ${round + 1} ${tree}: ${f(t.rps, 0)} req/s  p50 ${f(t.p50)} p90 ${f(t.p90)} ` +
            `p99 ${f(t.p99)} ms; old generation +${f(t.oldGrowthMbPerS)} MB/s, ` +
            `${t.markCompacts} mark-compacts holding ${f(t.heldShare * 100)} % of the requests ` +
            `(their p50 ${f(t.heldP50)} ms) and ${
              f(t.slowestInWindows * 100, 1)
            } % of the slowest 1 % (load ${loadAverage()})`,
        );
      }
    }
    return 0;
  } finally {
    await stopAll(children, dir);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
