/**
 * The engine at a git revision against the working tree's, on the 1 MiB bodies of the engine
 * benchmark, in one process: both are loaded, each body is judged by one then the other,
 * alternately, and the minimum of the rounds is kept, so a loaded machine slows both alike.
 *
 * ```sh
 * deno run -A scripts/bench_engine_ab.ts [revision=main] [rounds=5] [--benign | --attack]
 * ```
 *
 * Prints a Markdown table (ms per body, the ratio, a regex scan of the same megabyte) and the
 * load average before and after: differences smaller than the spread of a loaded machine are
 * noise.
 *
 * `--benign` judges the benign mix of `bench:proxy` instead (the six requests as the data plane
 * hands them to the engine, with the headers wrk sends), in rounds of 20,000 passes alternated
 * between the two engines: µs a request (the median and the minimum of the rounds), what the
 * engine costs the data plane on ordinary traffic. `--attack` does the same with the attack mix
 * (what blocking a request costs in the engine).
 */

import { inspect } from "../engine/inspect.ts";
import type { EngineRequest, Inspection, InspectOptions } from "../engine/types.ts";
import { BODIES } from "../tests/bench/engine_bodies.ts";
import { ATTACK, BENIGN } from "./bench_proxy.ts";

export type Inspect = (req: EngineRequest, opts: InspectOptions) => Inspection;

/** Extracts `engine/` at `revision` into a temporary directory and loads its inspector. */
export async function engineAt(revision: string): Promise<Inspect> {
  const dir = await Deno.makeTempDir({ prefix: "engine-ab-" });
  const archive = new Deno.Command("git", {
    args: ["archive", "--format=tar", revision, "engine"],
    stdout: "piped",
  }).spawn();
  const untar = new Deno.Command("tar", { args: ["-x", "-C", dir], stdin: "piped" }).spawn();
  await archive.stdout.pipeTo(untar.stdin);
  const [a, u] = await Promise.all([archive.status, untar.status]);
  if (!a.success || !u.success) throw new Error(`cannot extract engine/ at ${revision}`);
  const mod = await import(`file://${dir}/engine/inspect.ts`);
  return mod.inspect as Inspect;
}

function load(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

const SCAN = /<script|union\s+select|\.\.\/|\$\{jndi/gi;

const UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36";

/** A request mix of `bench:proxy` as the engine gets it from the data plane. */
function mixRequests(mix: typeof BENIGN): EngineRequest[] {
  const utf8 = new TextEncoder();
  return mix.map(([method, target, type, body]) => {
    const q = target.indexOf("?");
    const headers: Array<[string, string]> = [
      ["host", "on.bench"],
      ["user-agent", UA],
      ["accept", "text/html,application/json;q=0.9,*/*;q=0.8"],
      ["cookie", "session=4f2a9c1e7b; theme=dark"],
    ];
    if (type) headers.push(["content-type", type], ["content-length", String(body.length)]);
    return {
      method,
      path: q < 0 ? target : target.slice(0, q),
      query: q < 0 ? "" : target.slice(q + 1),
      headers,
      body: body ? utf8.encode(body) : undefined,
    };
  });
}

/**
 * µs a request of a mix for each engine, in alternated rounds. On the benign mix both engines
 * must give the same inspections; on the attack mix an older engine may judge differently.
 */
function timeMix(
  mixName: "benign" | "attack",
  before: Inspect,
  after: Inspect,
  revision: string,
  rounds: number,
): void {
  const reqs = mixRequests(mixName === "benign" ? BENIGN : ATTACK);
  const opts: InspectOptions = { level: "balanced" };
  const passes = 20_000;
  const time = (f: Inspect) => {
    const t0 = performance.now();
    for (let i = 0; i < passes; i++) for (const r of reqs) f(r, opts);
    return ((performance.now() - t0) * 1000) / (passes * reqs.length);
  };
  for (const r of reqs) {
    const [b, a] = [before(r, opts), after(r, opts)];
    if (JSON.stringify(b) === JSON.stringify(a)) continue;
    if (mixName === "benign") throw new Error(`the engines disagree on ${r.method} ${r.path}`);
    console.log(
      `differs: ${r.method} ${r.path}?${r.query}: ${b.findings.length} -> ${a.findings.length} findings`,
    );
  }
  time(before);
  time(after);
  const b: number[] = [];
  const a: number[] = [];
  for (let k = 0; k < rounds; k++) {
    if (k % 2 === 0) {
      b.push(time(before));
      a.push(time(after));
    } else {
      a.push(time(after));
      b.push(time(before));
    }
  }
  const mid = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const row = (label: string, f: (xs: number[]) => number) =>
    `| ${label} | ${f(b).toFixed(2)} | ${f(a).toFixed(2)} | ${(f(a) / f(b) * 100).toFixed(1)} % |`;
  console.log(`| ${mixName} mix, µs a request | ${revision} | now | now / ${revision} |`);
  console.log("|---|---:|---:|---:|");
  console.log(row(`median of ${rounds}`, mid));
  console.log(row(`min of ${rounds}`, (xs) => Math.min(...xs)));
  console.log(`rounds ${revision}: ${b.map((x) => x.toFixed(2)).join(" ")}`);
  console.log(`rounds now: ${a.map((x) => x.toFixed(2)).join(" ")}`);
}

/** Entry point. */
export async function main(args: string[]): Promise<number> {
  const flags = args.filter((a) => a.startsWith("--"));
  const positional = args.filter((a) => !a.startsWith("--"));
  const revision = positional[0] ?? "main";
  const rounds = Number(positional[1] ?? 5);
  const before = await engineAt(revision);
  const after = inspect as Inspect;
  const mixFlag = flags.includes("--benign")
    ? "benign"
    : flags.includes("--attack")
    ? "attack"
    : "";
  if (mixFlag) {
    console.log(`load average ${load()}; ${revision} against the working tree`);
    timeMix(mixFlag, before, after, revision, rounds);
    console.log(`load average ${load()}`);
    return 0;
  }
  const opts: InspectOptions = { level: "balanced" };
  console.log(`load average ${load()}; ${revision} against the working tree, min of ${rounds}`);
  console.log(`| 1 MiB body | ${revision} (ms) | now (ms) | regex scan (ms) | ${revision} / now |`);
  console.log("|---|---:|---:|---:|---:|");
  for (const [name, req] of BODIES) {
    before(req, opts);
    after(req, opts);
    let b = Infinity;
    let a = Infinity;
    let s = Infinity;
    for (let k = 0; k < rounds; k++) {
      let t0 = performance.now();
      before(req, opts);
      b = Math.min(b, performance.now() - t0);
      t0 = performance.now();
      after(req, opts);
      a = Math.min(a, performance.now() - t0);
      t0 = performance.now();
      const text = new TextDecoder().decode(req.body);
      SCAN.lastIndex = 0;
      while (SCAN.exec(text) !== null);
      s = Math.min(s, performance.now() - t0);
    }
    const label = name.replace("1 MiB of ", "");
    console.log(
      `| ${label} | ${b.toFixed(0)} | ${a.toFixed(0)} | ${s.toFixed(1)} | ${(b / a).toFixed(2)} |`,
    );
  }
  console.log(`load average ${load()}`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
