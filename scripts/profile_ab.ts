/**
 * Reads one `.cpuprofile` of a process that ran two checkouts side by side (e.g.
 * `bench_request_ab.ts` under `deno run --cpu-prof`) and attributes every sample to the checkout
 * whose files are on its stack, so both sides are measured in the same process and moment: the
 * total per side, then self time by file and by function of each side (a frame outside both
 * checkouts, a Deno built-in or a package, counts under the nearest checkout frame that called
 * it; under a `scripts/` frame it is the driver's and counts for neither), sorted by the
 * difference. Pass every profile of the run (one per thread) to count the threads too.
 *
 * ```sh
 * deno run -A --cpu-prof --cpu-prof-dir=/tmp/prof scripts/bench_request_ab.ts --a /tmp/ab-base --b .
 * deno run -A scripts/profile_ab.ts --a /tmp/ab-base --b . [--top 25] --profile /tmp/prof/*.cpuprofile
 * ```
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";

interface Node {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly children?: number[];
}

interface Profile {
  readonly nodes: Node[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

type Tally = Map<string, [number, number]>;

function add(m: Tally, key: string, side: 0 | 1, dt: number): void {
  const v = m.get(key) ?? [0, 0];
  v[side] += dt;
  m.set(key, v);
}

/** Per side: total, and self time by file and by function (µs of the profile). */
export function attribute(profile: Profile, roots: readonly [string, string]) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const sideOf = (url: string): 0 | 1 | undefined =>
    url.startsWith(roots[0]) ? 0 : url.startsWith(roots[1]) ? 1 : undefined;
  const files: Tally = new Map();
  const fns: Tally = new Map();
  const total: [number, number] = [0, 0];
  let shared = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0;
    // The nearest frame of a checkout: the sample's side and its project-level owner.
    for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      const side = sideOf(f.url);
      if (side === undefined) continue;
      const file = f.url.slice(roots[side].length);
      // The driving script (its requests, its in-process upstream) belongs to neither side.
      if (file.startsWith("scripts/")) {
        shared += dt;
        break;
      }
      total[side] += dt;
      add(files, file, side, dt);
      // By the file's name alone: a file moved between the trees is still the same code.
      add(fns, `${f.functionName || "(anonymous)"} ${file.replace(/^.*\//, "")}`, side, dt);
      break;
    }
  }
  const sorted = (m: Tally) =>
    [...m].sort((x, y) => Math.abs(y[1][1] - y[1][0]) - Math.abs(x[1][1] - x[1][0]));
  return { total, shared, files: sorted(files), functions: sorted(fns) };
}

/** The sum of several profiles' attributions (one per thread of the run). */
function merge(parts: ReturnType<typeof attribute>[]): ReturnType<typeof attribute> {
  const sum = (pick: (p: ReturnType<typeof attribute>) => Array<[string, [number, number]]>) => {
    const m: Tally = new Map();
    for (const p of parts) for (const [k, [a, b]] of pick(p)) add(add2(m, k, a), k, 1, b);
    return [...m].sort((x, y) => Math.abs(y[1][1] - y[1][0]) - Math.abs(x[1][1] - x[1][0]));
  };
  return {
    total: [
      parts.reduce((t, p) => t + p.total[0], 0),
      parts.reduce((t, p) => t + p.total[1], 0),
    ],
    shared: parts.reduce((t, p) => t + p.shared, 0),
    files: sum((p) => p.files),
    functions: sum((p) => p.functions),
  };
}

function add2(m: Tally, key: string, dt: number): Tally {
  add(m, key, 0, dt);
  return m;
}

export async function main(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      profile: { type: "string" },
      a: { type: "string" },
      b: { type: "string", default: "." },
      top: { type: "string", default: "25" },
    },
  });
  if (values.profile === undefined || values.a === undefined) {
    console.error(
      "usage: profile_ab.ts --profile <file.cpuprofile> --a <checkout> [--b <checkout>]",
    );
    return 2;
  }
  const url = (p: string) => `file://${resolve(p)}/`;
  const roots = [url(values.a), url(values.b)] as const;
  const parts = await Promise.all(
    [values.profile, ...positionals].map(async (f) =>
      attribute(JSON.parse(await Deno.readTextFile(f)) as Profile, roots)
    ),
  );
  const r = merge(parts);
  const ms = (us: number) => (us / 1000).toFixed(1);
  const top = Number(values.top);
  console.log(`| side | ms of the profiled threads |\n|---|---:|`);
  console.log(`| A | ${ms(r.total[0])} |\n| B | ${ms(r.total[1])} |`);
  console.log(`| shared (the driving script) | ${ms(r.shared)} |`);
  console.log(`B / A: ${(100 * r.total[1] / Math.max(1, r.total[0])).toFixed(1)} %\n`);
  for (const [title, rows] of [["file", r.files], ["function", r.functions]] as const) {
    console.log(`| ${title} | A ms | B ms | B - A |\n|---|---:|---:|---:|`);
    for (const [k, [a, b]] of rows.slice(0, top)) {
      console.log(`| ${k} | ${ms(a)} | ${ms(b)} | ${ms(b - a)} |`);
    }
    console.log("");
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
