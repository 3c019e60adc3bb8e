/**
 * What the WAF's main isolate allocates a request, per checkout: each tree's `main.ts serve` (the
 * benchmark sites of `bench_proxy.ts`, one data-plane worker, the shipped V8 flags plus
 * `--trace-gc-nvp`) in front of one nginx upstream, a 3 s wrk warm-up, then a measured wrk run
 * whose scavenges (V8's `allocated`, `new_space_survived` and `promoted`, summed over the run for
 * the isolate that scavenged most: the event loop's) are divided by the requests wrk counted.
 * Unlike the CPU a request, this hardly depends on the machine's load; it moves by about ±1 KB
 * between two runs of one tree (the semi-space's fill at the run's edges), so it resolves
 * differences of a few KB, not a few hundred bytes.
 *
 * ```sh
 * deno run -A scripts/bench_alloc.ts --sides /tmp/waf-a,. [--host off.bench] [--mix benign]
 *                                     [--duration 6]
 * ```
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { ATTACK, BENIGN, startNginxUpstream, startWaf, wrk, wrkScript } from "./bench_proxy.ts";
import { ensure, freePort } from "./bench_kit.ts";
import { SERVER_V8_FLAGS } from "./server_flags.ts";

interface Scavenges {
  count: number;
  allocated: number;
  survived: number;
  promoted: number;
}

/** The scavenges in V8's `--trace-gc-nvp` lines (JSON after `GC: `), summed per isolate. */
export function scavengesByIsolate(lines: readonly string[]): Map<string, Scavenges> {
  const out = new Map<string, Scavenges>();
  for (const line of lines) {
    const at = line.indexOf("GC: {");
    if (at < 0) continue;
    let gc: Record<string, unknown>;
    try {
      gc = JSON.parse(line.slice(at + 4));
    } catch {
      continue;
    }
    if (gc.gc !== "s") continue;
    const isolate = /^\[(\d+:0x[0-9a-f]+)/.exec(line)?.[1] ?? "?";
    const s = out.get(isolate) ?? { count: 0, allocated: 0, survived: 0, promoted: 0 };
    s.count++;
    s.allocated += Number(gc.allocated ?? 0);
    s.survived += Number(gc.new_space_survived ?? 0);
    s.promoted += Number(gc.promoted ?? 0);
    out.set(isolate, s);
  }
  return out;
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      sides: { type: "string" },
      host: { type: "string", default: "off.bench" },
      mix: { type: "string", default: "benign" },
      duration: { type: "string", default: "6" },
    },
  });
  const roots = (values.sides ?? "").split(",").filter(Boolean).map((p) => resolve(p) + "/");
  if (roots.length === 0) {
    console.error("usage: bench_alloc.ts --sides <checkout>[,<checkout>...]");
    return 2;
  }
  await ensure("wrk", "wrk");
  await ensure("nginx", "nginx-light");
  const mix = values.mix === "attack" ? ATTACK : BENIGN;
  const script = wrkScript(mix, values.host);
  const dir = await Deno.makeTempDir({ prefix: "waf-alloc-" });
  const upPort = freePort();
  const upstream = await startNginxUpstream(dir, upPort);
  const opts = { threads: 2, connections: 50 };
  try {
    for (const [i, root] of roots.entries()) {
      const port = freePort();
      const trace = `${dir}/gc-${i}.txt`;
      const child = await startWaf(
        dir,
        `http://127.0.0.1:${upPort}`,
        port,
        freePort(),
        "1",
        [],
        root,
        {
          name: `waf-${i}`,
          v8Flags: `${SERVER_V8_FLAGS},--trace-gc-nvp`,
          stdoutFile: trace,
        },
      );
      try {
        const url = `http://127.0.0.1:${port}`;
        await wrk(dir, url, script, { ...opts, duration: 3 });
        const mark = (await Deno.readTextFile(trace)).split("\n").length - 1;
        const r = await wrk(dir, url, script, { ...opts, duration: Number(values.duration) });
        await new Promise((ok) => setTimeout(ok, 200));
        const lines = (await Deno.readTextFile(trace)).split("\n").slice(mark);
        const main = [...scavengesByIsolate(lines).values()]
          .sort((a, b) => b.allocated - a.allocated)[0];
        if (main === undefined || r.requests === 0) throw new Error(`${root}: nothing measured`);
        console.log(
          `${String.fromCharCode(65 + i)} ${root}: ${r.requests} requests; main isolate ` +
            `${(main.allocated / r.requests / 1024).toFixed(2)} KB allocated a request, ` +
            `${(main.survived / r.requests).toFixed(0)} B survived a scavenge, ` +
            `${(main.promoted / r.requests).toFixed(0)} B promoted, ` +
            `${(1000 * main.count / r.requests).toFixed(2)} scavenges per 1,000 requests`,
        );
      } finally {
        child.kill("SIGTERM");
        await child.status;
      }
    }
    return 0;
  } finally {
    upstream.kill("SIGTERM");
    await upstream.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
