/**
 * What the observability counting (#16) costs the data plane: an A/B of two revisions of the WAF
 * in one run, by default the commit that added the per-site counters, the exposition and the
 * realtime bus (`c4cf608`) against its parent (the code before the #16 merge). Each revision is
 * extracted with `git archive` into a temporary folder, seeded with the same two sites as
 * `bench:proxy` (one with protection off, one with default protection), and started as its own
 * process; both run at once behind the same nginx upstream. wrk then alternates between them,
 * `--rounds` times per request mix (benign on the protected site, attacks on it, benign on the
 * unprotected one), so load from the rest of the machine hits both alike. Reported per mix: the
 * median requests per second, the median CPU time the WAF process used per request (less
 * sensitive to a busy machine than the rate), and candidate / baseline ratios.
 *
 * ```sh
 * deno task bench:counting [--baseline c4cf608^] [--candidate c4cf608] \
 *   [--rounds 3] [--duration 10] [--connections 20] [--threads 1] [--json]
 * ```
 */
import { parseArgs } from "node:util";
import { ensure, freePort, run, stopAll, waitForPort } from "./bench_kit.ts";
import { ATTACK, BENIGN, measured, startNginxUpstream, wrkScript } from "./bench_proxy.ts";
import { SERVER_V8_FLAGS } from "./server_flags.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** Seeds the sites with the revision's own modules (both revisions share these APIs). */
const SEED = `
import { createAuditRepo } from "./db/audit_repo.ts";
import { createSitesRepo } from "./db/sites_repo.ts";
import { openStore } from "./db/store.ts";
import { createAudit } from "./mod/core/audit.ts";
import { systemClock } from "./mod/core/clock.ts";
import { systemRandom } from "./mod/core/random.ts";
import { createPolicy } from "./mod/data_plane/policy.ts";
import { siteInputSchema } from "./mod/data_plane/site_schema.ts";
import { createSites } from "./mod/data_plane/sites.ts";
const [dataDir, upstream] = Deno.args;
const db = openStore(dataDir + "/waf.db", { now: systemClock.now() });
const repo = createSitesRepo(db);
const policy = createPolicy({ listSites: () => repo.list(), clock: systemClock });
const sites = createSites({
  db, repo, policy, clock: systemClock, random: systemRandom,
  audit: createAudit({ repo: createAuditRepo(db), clock: systemClock }),
});
const who = { actor: { type: "cli", name: "bench_counting" } };
sites.create(siteInputSchema.parse({ name: "off", hosts: ["off.bench"], upstreams: [upstream], mode: "off" }), who);
sites.create(siteInputSchema.parse({ name: "on", hosts: ["on.bench"], upstreams: [upstream] }), who);
db.close();
`;

interface Target {
  readonly label: string;
  readonly rev: string;
  readonly port: number;
  readonly child: Deno.ChildProcess;
}

async function startRevision(dir: string, label: string, rev: string, upstream: string) {
  const sha = (await run("git", ["-C", ROOT, "rev-parse", rev])).out.trim();
  if (!/^[0-9a-f]{40}$/.test(sha)) throw new Error(`Unknown revision "${rev}"`);
  const tree = `${dir}/${label}`;
  await Deno.mkdir(`${tree}/data`, { recursive: true });
  const archive = await run("sh", ["-c", `git -C "${ROOT}" archive ${sha} | tar -x -C "${tree}"`]);
  if (archive.code !== 0) throw new Error(`git archive ${rev} failed`);
  await Deno.writeTextFile(`${tree}/bench_seed.ts`, SEED);
  const seed = await run(Deno.execPath(), [
    "run",
    "-A",
    `${tree}/bench_seed.ts`,
    `${tree}/data`,
    upstream,
  ], false);
  if (seed.code !== 0) throw new Error(`seeding ${label} failed`);
  const port = freePort();
  await Deno.writeTextFile(
    `${tree}/data/waf.yaml`,
    `server:
  data:
    listen: "127.0.0.1:${port}"
  management:
    listen: "127.0.0.1:${freePort()}"
logging:
  level: warn
`,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVER_V8_FLAGS, `${tree}/main.ts`, "serve", "--data-dir", `${tree}/data`],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  await waitForPort(port, `waf ${label} (${rev})`);
  return { label, rev: `${rev} (${sha.slice(0, 7)})`, port, child } satisfies Target;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      baseline: { type: "string", default: "c4cf608^" },
      candidate: { type: "string", default: "c4cf608" },
      rounds: { type: "string", default: "3" },
      duration: { type: "string", default: "10" },
      connections: { type: "string", default: "20" },
      threads: { type: "string", default: "1" },
      json: { type: "boolean", default: false },
    },
  });
  const opts = {
    threads: Number(values.threads),
    connections: Number(values.connections),
    duration: Number(values.duration),
  };
  const rounds = Number(values.rounds);
  await ensure("wrk", "wrk");
  await ensure("nginx", "nginx-light");
  const dir = await Deno.makeTempDir({ prefix: "waf-bench-counting-" });
  const upPort = freePort();
  const children: Deno.ChildProcess[] = [];
  try {
    children.push(
      await startNginxUpstream(dir, upPort),
    );
    const upstream = `http://127.0.0.1:${upPort}`;
    const base = await startRevision(dir, "baseline", values.baseline!, upstream);
    children.push(base.child);
    const cand = await startRevision(dir, "candidate", values.candidate!, upstream);
    children.push(cand.child);
    const mixes = [
      { name: "benign, protected site", host: "on.bench", mix: BENIGN },
      { name: "attacks, protected site", host: "on.bench", mix: ATTACK },
      { name: "benign, protection off", host: "off.bench", mix: BENIGN },
    ];
    const report = [];
    for (const m of mixes) {
      const script = wrkScript(m.mix, m.host);
      const got: Record<string, { rps: number[]; cpu: number[]; p99: number[] }> = {
        baseline: { rps: [], cpu: [], p99: [] },
        candidate: { rps: [], cpu: [], p99: [] },
      };
      // Warm both (JIT, pools), then alternate which goes first.
      for (const t of [base, cand]) {
        await measured(t.child.pid, dir, `http://127.0.0.1:${t.port}/`, script, {
          ...opts,
          duration: 3,
        });
      }
      for (let r = 0; r < rounds; r++) {
        for (const t of r % 2 === 0 ? [base, cand] : [cand, base]) {
          const w = await measured(t.child.pid, dir, `http://127.0.0.1:${t.port}/`, script, opts);
          got[t.label]!.rps.push(w.rps);
          got[t.label]!.cpu.push(w.cpuUs ?? NaN);
          got[t.label]!.p99.push(w.p99);
        }
      }
      const b = got.baseline!;
      const c = got.candidate!;
      report.push({
        mix: m.name,
        baseline: { rps: median(b.rps), cpu_us: median(b.cpu), p99_ms: median(b.p99), runs: b },
        candidate: { rps: median(c.rps), cpu_us: median(c.cpu), p99_ms: median(c.p99), runs: c },
        rps_ratio: median(c.rps) / median(b.rps),
        cpu_ratio: median(c.cpu) / median(b.cpu),
      });
    }
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    if (values.json) {
      console.log(JSON.stringify({ baseline: base.rev, candidate: cand.rev, load, report }));
    } else {
      console.log(`baseline ${base.rev}, candidate ${cand.rev}; load average after: ${load}`);
      console.log(
        `${rounds} alternating rounds of ${opts.duration} s, ${opts.connections} connections`,
      );
      for (const r of report) {
        console.log(
          `${r.mix.padEnd(26)} rps ${r.baseline.rps.toFixed(0)} -> ${
            r.candidate.rps.toFixed(0)
          } (x${r.rps_ratio.toFixed(3)})  CPU/request ${r.baseline.cpu_us.toFixed(0)} -> ${
            r.candidate.cpu_us.toFixed(0)
          } µs (x${r.cpu_ratio.toFixed(3)})  p99 ${r.baseline.p99_ms} -> ${r.candidate.p99_ms} ms`,
        );
      }
    }
    return 0;
  } finally {
    await stopAll(children, dir);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
