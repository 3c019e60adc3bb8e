/**
 * Profiles the WAF's whole request path under load: nginx as the upstream, the WAF (`main.ts
 * serve`, the benchmark sites of `bench_proxy.ts`) started with `--cpu-prof`, wrk for
 * `--duration` seconds after a warm-up, then a graceful stop so the profile is written. Prints
 * the functions with the most self time and the project's files by inclusive time, and keeps the
 * `.cpuprofile` (open it in Chromium's DevTools, Performance panel) when `--out` is given.
 *
 * ```sh
 * deno task profile:proxy [--host on.bench|off.bench] [--mix get|benign|attack] [--duration 10]
 *                         [--connections 50] [--top 40] [--out /tmp/waf.cpuprofile]
 *                         [--delay 7]
 * ```
 *
 * `--delay <ms>` paces every connection (a wait of that many ms after each answer, as the
 * half-rate phase of `bench_proxy.ts` does): the event loop's work a request at low concurrency,
 * where requests do not share reads, writes and wake-ups.
 */
import { parseArgs } from "node:util";
import { ATTACK, BENIGN, startNginxUpstream, startWaf, wrk, wrkScript } from "./bench_proxy.ts";
import { ensure, freePort } from "./bench_kit.ts";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
  };
  readonly children?: number[];
}

interface CpuProfile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
  readonly startTime: number;
  readonly endTime: number;
}

const ROOT = new URL("..", import.meta.url).href;

function frameName(node: ProfileNode): string {
  const f = node.callFrame;
  const url = f.url.startsWith(ROOT) ? f.url.slice(ROOT.length) : f.url.replace(/^.*\//, "");
  return `${f.functionName || "(anonymous)"} ${url ? `${url}:${f.lineNumber + 1}` : ""}`.trim();
}

/** Self time per function and inclusive time per project file, in µs of the profile. */
export function summarise(profile: CpuProfile): {
  total: number;
  self: Array<[string, number]>;
  files: Array<[string, number]>;
} {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const files = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0;
    const node = byId.get(profile.samples[i]!)!;
    total += dt;
    const name = frameName(node);
    self.set(name, (self.get(name) ?? 0) + dt);
    // Each project file on the stack counts once per sample.
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const url = byId.get(id)!.callFrame.url;
      if (!url.startsWith(ROOT)) continue;
      const file = url.slice(ROOT.length);
      if (seen.has(file)) continue;
      seen.add(file);
      files.set(file, (files.get(file) ?? 0) + dt);
    }
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return { total, self: sorted(self), files: sorted(files) };
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: "string", default: "on.bench" },
      mix: { type: "string", default: "get" },
      duration: { type: "string", default: "10" },
      connections: { type: "string", default: "50" },
      threads: { type: "string", default: "2" },
      top: { type: "string", default: "40" },
      out: { type: "string" },
      delay: { type: "string" },
    },
  });
  const mix = values.mix === "attack"
    ? ATTACK
    : values.mix === "benign"
    ? BENIGN
    : BENIGN.filter(([method]) => method === "GET");
  await ensure("wrk", "wrk");
  await ensure("nginx", "nginx-light");
  const dir = await Deno.makeTempDir({ prefix: "waf-profile-" });
  const upPort = freePort();
  const upstream = await startNginxUpstream(dir, upPort);
  const wafPort = freePort();
  const profDir = `${dir}/prof`;
  const waf = await startWaf(dir, `http://127.0.0.1:${upPort}`, wafPort, freePort(), "1", [
    "--cpu-prof",
    `--cpu-prof-dir=${profDir}`,
  ]);
  try {
    const url = `http://127.0.0.1:${wafPort}`;
    const script = wrkScript(
      mix,
      values.host,
      values.delay === undefined ? undefined : Number(values.delay),
    );
    const opts = {
      threads: Number(values.threads),
      connections: Number(values.connections),
      duration: 3,
    };
    await wrk(dir, url, script, opts);
    const r = await wrk(dir, url, script, { ...opts, duration: Number(values.duration) });
    console.log(
      `${values.mix} on ${values.host}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(2)} ms, ` +
        `non-2xx ${r.non2xx}/${r.requests}`,
    );
    waf.kill("SIGTERM");
    await waf.status;
    // One profile per isolate: the main thread's and the access-log writer thread's.
    const profiles = [];
    for (const e of Deno.readDirSync(profDir)) {
      if (!e.name.endsWith(".cpuprofile")) continue;
      const path = `${profDir}/${e.name}`;
      const summary = summarise(JSON.parse(await Deno.readTextFile(path)));
      const main = summary.files.some(([f]) => f === "main.ts" || f.startsWith("routes/"));
      profiles.push({ path, main, summary });
    }
    profiles.sort((a, b) => Number(b.main) - Number(a.main));
    if (profiles.length === 0) throw new Error("the WAF wrote no profile");
    if (values.out) await Deno.copyFile(profiles[0]!.path, values.out);
    const top = Number(values.top);
    for (const { main, summary: { total, self, files } } of profiles) {
      const idle = self.find(([name]) => name === "(idle)")?.[1] ?? 0;
      const pct = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)}%`;
      const busyUs = ((total - idle) / Math.max(1, r.requests)) *
        (Number(values.duration) / (Number(values.duration) + 3));
      console.log(
        `\n${main ? "main thread" : "other thread"}: ${(total / 1e6).toFixed(1)} s sampled ` +
          `(warm-up included), busy ${pct(total - idle)} (about ${busyUs.toFixed(1)} µs a ` +
          `measured request)`,
      );
      const n = main ? top : Math.min(top, 12);
      console.log("self time:");
      for (const [name, us] of self.slice(0, n)) console.log(`  ${pct(us)}  ${name}`);
      console.log("project files on the stack (inclusive):");
      for (const [name, us] of files.slice(0, n)) console.log(`  ${pct(us)}  ${name}`);
    }
    return 0;
  } finally {
    try {
      waf.kill("SIGTERM");
    } catch { /* stopped above */ }
    await waf.status;
    upstream.kill("SIGTERM");
    await upstream.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
