/**
 * The engine at a git revision against the working tree's, on the 1 MiB bodies of the engine
 * benchmark, in one process: both are loaded, each body is judged by one then the other,
 * alternately, and the minimum of the rounds is kept, so a loaded machine slows both alike.
 *
 * ```sh
 * deno run -A scripts/bench_engine_ab.ts [revision=main] [rounds=5]
 * ```
 *
 * Prints a Markdown table (ms per body, the ratio, a regex scan of the same megabyte) and the
 * load average before and after: differences smaller than the spread of a loaded machine are
 * noise.
 */

import { inspect } from "../engine/inspect.ts";
import type { Inspection, InspectOptions } from "../engine/types.ts";
import { BODIES } from "../tests/bench/engine_bodies.ts";

type Inspect = (req: (typeof BODIES)[number][1], opts: InspectOptions) => Inspection;

/** Extracts `engine/` at `revision` into a temporary directory and loads its inspector. */
async function engineAt(revision: string): Promise<Inspect> {
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

/** Entry point. */
export async function main(args: string[]): Promise<number> {
  const revision = args[0] ?? "main";
  const rounds = Number(args[1] ?? 5);
  const before = await engineAt(revision);
  const after = inspect as Inspect;
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
