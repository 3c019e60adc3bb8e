/**
 * Body throughput of the engine against the engine of a baseline revision, in the same run:
 * realistic 1 MiB bodies (`engine_body_kinds.ts`: a JSON API document, an urlencoded form,
 * English prose as text/plain and as a JSON string, a multipart form) and a typical benign GET.
 *
 * ```sh
 * ENGINE_BASE=eebb492 deno bench -A tests/bench/engine_body_bench.ts
 * ```
 *
 * Each group pairs the baseline's engine (`engine/` of `ENGINE_BASE`, default `eebb492`, the
 * commit issue #33's speed work started from, extracted by `git archive` into a temporary
 * directory, so the repository stays clean) with the working tree's. Every body is 1 MiB, so a
 * row's `iter/s` is MiB/s, and Deno's summary gives the ratio new/old. `scripts/
 * bench_engine_body.ts` prints the same as MB/s with the issue's target line.
 */

import { inspect } from "../../engine/inspect.ts";
import { engineAt } from "../../scripts/bench_engine_ab.ts";
import { BENIGN_GET, BODY_KINDS } from "./engine_body_kinds.ts";

const base = Deno.env.get("ENGINE_BASE") ?? "eebb492";
const before = await engineAt(base);
const opts = { level: "balanced" } as const;

for (const [name, req] of BODY_KINDS) {
  Deno.bench(`${base}: ${name} (1 MiB)`, { group: name, baseline: true, n: 5, warmup: 1 }, () => {
    before(req, opts);
  });
  Deno.bench(`now: ${name} (1 MiB)`, { group: name, n: 5, warmup: 1 }, () => {
    inspect(req, opts);
  });
}

Deno.bench(`${base}: a typical benign GET`, { group: "benign GET", baseline: true }, () => {
  before(BENIGN_GET, opts);
});
Deno.bench("now: a typical benign GET", { group: "benign GET" }, () => {
  inspect(BENIGN_GET, opts);
});
