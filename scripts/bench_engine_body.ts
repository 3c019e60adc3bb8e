/**
 * Body throughput of the working tree's engine against a baseline revision's, in one process:
 * the realistic 1 MiB bodies of `tests/bench/engine_body_kinds.ts` (JSON API document,
 * urlencoded form, prose as text/plain and as a JSON string, multipart form) and a typical
 * benign GET, judged by one engine then the other, alternately, keeping the least CPU time of the
 * rounds: on a shared machine the time other processes run does not count, as it would with
 * wall-clock time.
 *
 * ```sh
 * deno run -A scripts/bench_engine_body.ts [revision=eebb492] [rounds=5]
 * ```
 *
 * Prints MB/s (10^6 bytes a CPU second) per body kind for both engines and the ratio now/baseline,
 * the benign GET in µs, the load average before and after, and whether issue #33's target is
 * met: at least 40 MB/s on every JSON, form and prose body, and the benign GET at most 20 µs.
 * The baseline's `engine/` is extracted by `git archive` into a temporary directory.
 */

import { inspect } from "../engine/inspect.ts";
import type { InspectOptions } from "../engine/types.ts";
import { BENIGN_GET, BODY_KINDS, TARGET_KINDS } from "../tests/bench/engine_body_kinds.ts";
import { engineAt, type Inspect } from "./bench_engine_ab.ts";
import { cpuMs, loadAverage } from "./bench_kit.ts";

/** The targets. */
const TARGET_MB_S = 40;
const TARGET_GET_US = 20;

/** Least CPU milliseconds of `rounds` calls of each engine, alternated. */
function best(before: () => void, after: () => void, rounds: number): [number, number] {
  before();
  after();
  let b = Infinity;
  let a = Infinity;
  for (let k = 0; k < rounds; k++) {
    const first = k % 2 === 0 ? before : after;
    const second = k % 2 === 0 ? after : before;
    let t0 = cpuMs();
    first();
    const t1 = cpuMs() - t0;
    t0 = cpuMs();
    second();
    const t2 = cpuMs() - t0;
    if (k % 2 === 0) [b, a] = [Math.min(b, t1), Math.min(a, t2)];
    else [a, b] = [Math.min(a, t1), Math.min(b, t2)];
  }
  return [b, a];
}

/** Entry point; the exit code is 0 whether or not the target is met. */
export async function main(args: string[]): Promise<number> {
  const revision = args[0] ?? "eebb492";
  const rounds = Number(args[1] ?? 5);
  const before = await engineAt(revision);
  const after = inspect as Inspect;
  const opts: InspectOptions = { level: "balanced" };
  console.log(
    `load average ${loadAverage()}; ${revision} against the working tree, best of ${rounds}`,
  );
  console.log(`| 1 MiB body | ${revision} MB/s | now MB/s | now / ${revision} | target |`);
  console.log("|---|---:|---:|---:|---|");
  let met = true;
  for (const [name, req] of BODY_KINDS) {
    const bytes = req.body?.length ?? 0;
    const [b, a] = best(() => before(req, opts), () => after(req, opts), rounds);
    const mbs = (ms: number) => bytes / 1e6 / (ms / 1000);
    const target = TARGET_KINDS.has(name);
    const ok = mbs(a) >= TARGET_MB_S;
    if (target && !ok) met = false;
    const verdict = target ? (ok ? "met" : "not met") : "-";
    console.log(
      `| ${name} | ${mbs(b).toFixed(1)} | ${mbs(a).toFixed(1)} | ${
        (b / a).toFixed(2)
      } | ${verdict} |`,
    );
  }
  const passes = 20_000;
  const [gb, ga] = best(
    () => {
      for (let i = 0; i < passes; i++) before(BENIGN_GET, opts);
    },
    () => {
      for (let i = 0; i < passes; i++) after(BENIGN_GET, opts);
    },
    rounds,
  );
  const us = (ms: number) => (ms * 1000) / passes;
  const getOk = us(ga) <= TARGET_GET_US;
  if (!getOk) met = false;
  console.log(
    `| benign GET, µs | ${us(gb).toFixed(2)} | ${us(ga).toFixed(2)} | ${(gb / ga).toFixed(2)} | ${
      getOk ? "met" : "not met"
    } |`,
  );
  console.log(
    `target (>= ${TARGET_MB_S} MB/s on JSON, form, prose; GET <= ${TARGET_GET_US} µs): ${
      met ? "met" : "not met"
    }`,
  );
  console.log(`load average ${loadAverage()}`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
