/**
 * Data-plane throughput with every protection control enabled, against the same data plane
 * with only the semantic engine (no control configured), in one run with one load generator
 * (wrk), on a benign request mix. Controls: 100,000 IP list entries, 20 ACL rules, 20 custom
 * RE2 rules, a threat feed of 100,000 indicators, a bot policy with a rate threshold, the
 * global rate limit, ALAP, two response header rules and compression settings. None of them
 * matches the benign traffic, so every request pays for every check and still reaches the
 * upstream.
 *
 * `--apisec` adds a pair measuring API security against the same engine-only baseline: every
 * request carries an HS256 bearer token verified on every route (results cached by token for its
 * lifetime), 20 schema entries (one matches the mix's POST), a route limit on every path and
 * discovery sampling every request. Both servers of that pair get the same requests, token
 * included.
 *
 * By default (`--mode paired`) both servers run at once and every round loads both at the same
 * moment; the verdict is the median of the rounds' ratios. Each round also reads each server's CPU
 * time (`/proc`) and prints the CPU time per request, baseline over variant: the throughput the
 * variant keeps on the same CPU, the steadier figure when other work takes the cores. `--calibrate` adds a control pair of
 * two engine-only servers (the method's noise floor, expected near 100%). `--mode alternate`
 * runs one server at a time in alternating rounds and compares the best rounds.
 *
 * `--burst` runs only the burst case instead (`bench_policy_burst.ts`): the data plane's throughput
 * while bursts of 100 management writes change a policy of about 550 objects, against the same
 * server without writes, paired (target: above 70 %).
 *
 * ```sh
 * deno task bench:protection [--duration 10] [--rounds 5] [--connections 50] [--threads 2]
 *                            [--mode paired|alternate] [--calibrate] [--apisec]
 *                            [--burst [--root DIR]]
 * ```
 *
 * wrk is installed with apt-get when missing (needs root).
 */
import { parseArgs } from "node:util";
import { cpuTicks, ensure, freePort, run, waitForPort } from "./bench_kit.ts";
import { SERVER_V8_FLAGS } from "./server_flags.ts";
import { systemClock } from "../mod/core/clock.ts";
import { KIND } from "../mod/protection/protection_compile.ts";
import {
  aclRuleSchema,
  botPolicySchema,
  customRuleSchema,
  edgeSettingsSchema,
  headerRuleSchema,
  ipEntrySchema,
  rateLimitSchema,
  threatFeedSchema,
} from "../mod/protection/protection_schema.ts";
import { FEED_STATUS } from "../mod/protection/threat_feeds.ts";
import { siteInputSchema } from "../mod/data_plane/site_schema.ts";
import { SignJWT } from "jose";
import { burstCase } from "./bench_policy_burst.ts";
import { seedStore } from "./bench_seed.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const WHO = { actor: { type: "cli" as const, name: "bench_protection" } };

const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

/** Seeds a store with the benchmark site and, for `all`, every protection control. */
export function seed(dataDir: string, upstream: string, all: boolean): void {
  seedStore(dataDir, ({ db, sites, objects: o }) => {
    sites.create(
      siteInputSchema.parse({ name: "shop", hosts: ["shop.bench"], upstreams: [upstream] }),
      WHO,
    );
    if (!all) return;
    db.exec("BEGIN");
    for (let i = 1; i <= 100_000; i++) {
      o.createInternal(KIND.ip, ipEntrySchema.parse({ action: "block", cidr: ip(i) }), null);
    }
    db.exec("COMMIT");
    o.create(
      { kind: KIND.ip, audit: "bench" },
      ipEntrySchema.parse({ action: "allow", cidr: "192.0.2.1" }),
      WHO,
    );
    for (let i = 0; i < 20; i++) {
      o.create(
        { kind: KIND.acl, audit: "bench" },
        aclRuleSchema.parse({
          name: `acl ${i}`,
          action: "block",
          conditions: { methods: ["PUT"], path: { regex: `^/admin${i}/` } },
        }),
        WHO,
      );
      o.create(
        { kind: KIND.custom, audit: "bench" },
        customRuleSchema.parse({
          name: `custom ${i}`,
          target: i % 2 ? { kind: "any_param" } : { kind: "header", name: "user-agent" },
          pattern: `evil${i}[0-9]+`,
          action: "block",
          priority: i,
        }),
        WHO,
      );
    }
    // An uploaded feed, already synced (so the scheduler leaves it alone during the run).
    const networks = Array.from({ length: 100_000 }, (_, i) => ip(i + 200_000));
    const feed = o.create(
      { kind: KIND.feed, audit: "bench" },
      threatFeedSchema.parse({ name: "feed", content: networks.join("\n") }),
      WHO,
    );
    o.putInternal(KIND.indicators, `${feed.id}:indicators`, {
      networks: networks.map((n) => `${n}/32`),
    });
    o.putInternal(FEED_STATUS, `${feed.id}:status`, {
      last_sync_at: new Date(systemClock.now()).toISOString(),
      last_result: "ok",
      count: networks.length,
      invalid: 0,
      error: null,
    });
    o.create(
      { kind: KIND.bot, audit: "bench" },
      botPolicySchema.parse({
        mode: "suspicious",
        rate_threshold: { requests: 1_000_000, window_seconds: 60 },
      }),
      WHO,
    );
    o.putSingleton(
      { kind: KIND.rateLimit, audit: "bench" },
      rateLimitSchema.parse({ enabled: true, requests: 1_000_000, window_seconds: 1 }),
      WHO,
    );
    o.create(
      { kind: KIND.headerRule, audit: "bench" },
      headerRuleSchema.parse({ op: "set", name: "X-Frame-Options", value: "DENY" }),
      WHO,
    );
    o.create(
      { kind: KIND.headerRule, audit: "bench" },
      headerRuleSchema.parse({ op: "remove", name: "Server" }),
      WHO,
    );
    o.putSingleton(
      { kind: KIND.edge, audit: "bench" },
      edgeSettingsSchema.parse({ compression: { gzip: true, brotli: true } }),
      WHO,
    );
  });
}

const MIX: ReadonlyArray<readonly [string, string, string]> = [
  ["GET", "/products/42?ref=home&page=2", ""],
  ["GET", "/search?q=blue+running+shoes&sort=price", ""],
  ["POST", "/cart", "item=42&qty=1&note=gift+wrap"],
  ["GET", "/static/app.js", ""],
];

export const JWT_SECRET = "bench-shared-secret-of-32-chars!";

/** The `apisec` block of the API-security variant's `waf.yaml` (JSON is YAML). */
export function apisecYaml(): string {
  const schemas = Array.from({ length: 19 }, (_, i) => ({
    id: `s${i}`,
    method: "POST",
    path_pattern: `^/api/v${i}/orders/[0-9]+$`,
    required_params: ["sku"],
    required_headers: ["x-api-key"],
    max_body_bytes: 4096,
  }));
  schemas.push({
    id: "cart",
    method: "POST",
    path_pattern: "^/cart$",
    required_params: ["item", "qty"],
    required_headers: ["user-agent"],
    max_body_bytes: 4096,
  });
  return `apisec: ${
    JSON.stringify({
      discovery: { enabled: true, sample_limit: 1_000_000 },
      validation: { enabled: true, schemas },
      auth: {
        enabled: true,
        algorithms: ["HS256"],
        secret: JWT_SECRET,
        routes: [{ id: "all", method: "*", path_pattern: "^/" }],
      },
      rate_limits: [{
        id: "all",
        method: "*",
        path_pattern: "^/",
        requests: 10_000_000,
        window: "1m",
      }],
    })
  }\n`;
}

export function wrkScript(token?: string): string {
  const auth = token ? `, ["Authorization"]="Bearer ${token}"` : "";
  const reqs = MIX.map(([m, p, b]) =>
    `wrk.format(${JSON.stringify(m)}, ${
      JSON.stringify(p)
    }, {["Host"]="shop.bench", ["User-Agent"]="Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0 Safari/537.36", ["Cookie"]="session=4f2a9c1e7b"${auth}${
      b ? `, ["Content-Type"]="application/x-www-form-urlencoded"` : ""
    }}, ${b ? JSON.stringify(b) : "nil"})`
  );
  return `local reqs = {}
init = function(args) reqs = { ${reqs.join(", ")} } end
local i = 0
request = function() i = i + 1; return reqs[(i % #reqs) + 1] end
`;
}

async function wrk(dir: string, port: number, o: WrkOptions, mix = "mix") {
  const script = `${dir}/${mix}.lua`;
  const r = await run("wrk", [
    `-t${o.threads}`,
    `-c${o.connections}`,
    `-d${o.duration}s`,
    "-s",
    script,
    `http://127.0.0.1:${port}/`,
  ]);
  if (r.code !== 0) throw new Error(`wrk failed:\n${r.out}`);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(r.out)?.[1] ?? 0);
  if (non2xx > 0) {
    throw new Error(`${non2xx} requests were not answered 2xx: a control matched the benign mix`);
  }
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(r.out)?.[1] ?? NaN);
}

/** wrk against one server, with the CPU time its process used per request (µs). */
async function measuredWrk(dir: string, port: number, pid: number, o: WrkOptions, mix: string) {
  const before = cpuTicks(pid);
  const rps = await wrk(dir, port, o, mix);
  const requests = Math.max(1, rps * o.duration);
  return { rps, cpuUs: ((cpuTicks(pid) - before) * 10_000) / requests };
}

async function startWaf(dataDir: string, port: number) {
  const extra = dataDir.endsWith("/apisec") ? apisecYaml() : "";
  await Deno.writeTextFile(
    `${dataDir}/waf.yaml`,
    `server:\n  data:\n    listen: "127.0.0.1:${port}"\n  management:\n    listen: "127.0.0.1:${freePort()}"\nlogging:\n  level: warn\n${extra}`,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVER_V8_FLAGS, `${ROOT}main.ts`, "serve", "--data-dir", dataDir],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  await waitForPort(port, "waf data plane");
  return child;
}

type WrkOptions = { threads: number; connections: number; duration: number };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/**
 * Paired mode: both servers run at once and each round loads them at the same moment, each
 * with half the load generator (threads and connections), so a neighbour that slows the
 * machine slows both sides of the ratio. Rounds of the same variant run one after the other
 * swing by a third on this shared machine; paired rounds of two identical servers (the
 * `--calibrate` control) stay within a few percent of 100%.
 */
async function paired(
  dir: string,
  o: WrkOptions,
  rounds: number,
  calibrate: boolean,
  apisec: boolean,
): Promise<number> {
  const half = {
    ...o,
    threads: Math.max(1, o.threads >> 1),
    connections: Math.max(1, o.connections >> 1),
  };
  const pairs: Array<[string, string, string]> = [["engine only", "all controls", "all"]];
  if (calibrate) pairs.push(["engine only", "engine only (twin)", "twin"]);
  if (apisec) pairs.push(["engine only", "API security", "apisec"]);
  const servers = new Map<string, { port: number; child: Deno.ChildProcess }>();
  try {
    for (
      const name of ["engine", "all", ...(calibrate ? ["twin"] : []), ...(apisec ? ["apisec"] : [])]
    ) {
      const port = freePort();
      servers.set(name, { port, child: await startWaf(`${dir}/${name}`, port) });
    }
    const server = (name: string) => servers.get(name)!;
    // The API-security pair sends the bearer token to both sides (the baseline ignores it).
    const both = (b: string, d: number) => {
      const mix = b === "apisec" ? "mix-token" : "mix";
      const one = (name: string) =>
        measuredWrk(dir, server(name).port, server(name).child.pid, { ...half, duration: d }, mix);
      return Promise.all([one("engine"), one(b)]);
    };
    let verdict = NaN;
    for (const [baseName, otherName, other] of pairs) {
      await both(other, 2);
      const ratios: number[] = [];
      // CPU per request, baseline over other: the throughput the other would keep on the same
      // CPU, steadier than req/s when neighbours take the cores.
      const cpuRatios: number[] = [];
      const base: number[] = [];
      const them: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const [e, a] = await both(other, o.duration);
        base.push(e.rps);
        them.push(a.rps);
        ratios.push(a.rps / e.rps);
        cpuRatios.push(e.cpuUs / a.cpuUs);
        console.log(
          `round ${round + 1}  ${baseName} ${e.rps.toFixed(0)} req/s ${
            e.cpuUs.toFixed(0)
          } µs CPU/req, ${otherName} ${a.rps.toFixed(0)} req/s ${
            a.cpuUs.toFixed(0)
          } µs CPU/req, ratio ${pct(a.rps / e.rps)}, CPU ratio ${pct(e.cpuUs / a.cpuUs)}`,
        );
      }
      console.log(
        `${otherName} / ${baseName}: median ${pct(median(ratios))}, total ${
          pct(mean(them) / mean(base))
        } (ratios ${pct(Math.min(...ratios))} to ${pct(Math.max(...ratios))}); CPU per request ${
          pct(median(cpuRatios))
        } median (${pct(Math.min(...cpuRatios))} to ${pct(Math.max(...cpuRatios))})\n`,
      );
      if (other === "all") verdict = median(ratios);
    }
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    console.log(`load average at the end: ${load}`);
    console.log(`ratio         ${pct(verdict)} median of paired rounds (target >= 80%)`);
    return verdict >= 0.8 ? 0 : 1;
  } finally {
    for (const { child } of servers.values()) {
      child.kill("SIGTERM");
      await child.status;
    }
  }
}

/** Alternate mode: one server at a time, engine only and all controls in turn. */
async function alternate(dir: string, o: WrkOptions, rounds: number): Promise<number> {
  const variants = [["engine only", "engine"], ["all controls", "all"]] as const;
  const results: Record<string, number[]> = { "engine only": [], "all controls": [] };
  for (let round = 0; round < rounds; round++) {
    for (const [name, sub] of variants) {
      const port = freePort();
      const waf = await startWaf(`${dir}/${sub}`, port);
      try {
        await wrk(dir, port, { ...o, duration: 2 });
        const rps = await wrk(dir, port, o);
        results[name]!.push(rps);
        console.log(`round ${round + 1}  ${name.padEnd(13)} ${rps.toFixed(0)} req/s`);
      } finally {
        waf.kill("SIGTERM");
        await waf.status;
      }
    }
  }
  const best = (xs: number[]) => Math.max(...xs);
  const e = results["engine only"]!;
  const a = results["all controls"]!;
  console.log(`\nengine only   best ${best(e).toFixed(0)} req/s, mean ${mean(e).toFixed(0)}`);
  console.log(`all controls  best ${best(a).toFixed(0)} req/s, mean ${mean(a).toFixed(0)}`);
  const ratio = best(a) / best(e);
  console.log(
    `ratio         ${pct(ratio)} best/best, ${pct(mean(a) / mean(e))} mean/mean (target >= 80%)`,
  );
  return ratio >= 0.8 ? 0 : 1;
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      duration: { type: "string", default: "10" },
      connections: { type: "string", default: "50" },
      threads: { type: "string", default: "2" },
      rounds: { type: "string", default: "5" },
      mode: { type: "string", default: "paired" },
      calibrate: { type: "boolean", default: false },
      apisec: { type: "boolean", default: false },
      /** Only the burst case: data-plane throughput during bursts of 100 management writes. */
      burst: { type: "boolean", default: false },
      /** With `--burst`: the checkout whose servers run (default: this one). */
      root: { type: "string" },
    },
  });
  const o = {
    duration: Number(values.duration),
    connections: Number(values.connections),
    threads: Number(values.threads),
  };
  if (values.mode !== "paired" && values.mode !== "alternate") {
    console.error(`--mode must be "paired" or "alternate", not "${values.mode}"`);
    return 2;
  }
  await ensure("wrk", "wrk");
  const dir = await Deno.makeTempDir({ prefix: "waf-bench-protection-" });
  const upPort = freePort();
  const upstream = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `Deno.serve({hostname:"127.0.0.1",port:${upPort},onListen(){}},()=>new Response("ok",{headers:{"content-type":"text/plain"}}))`,
    ],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  try {
    await waitForPort(upPort, "upstream");
    await Deno.writeTextFile(`${dir}/mix.lua`, wrkScript());
    const now = Math.floor(systemClock.now() / 1000);
    const token = await new SignJWT({ sub: "bench" }).setProtectedHeader({ alg: "HS256" })
      .setIssuedAt(now).setExpirationTime(now + 3600).sign(new TextEncoder().encode(JWT_SECRET));
    await Deno.writeTextFile(`${dir}/mix-token.lua`, wrkScript(token));
    if (values.burst) {
      return await burstCase(
        dir,
        `http://127.0.0.1:${upPort}`,
        o,
        Number(values.rounds),
        values.calibrate,
        values.root === undefined
          ? undefined
          : (values.root.endsWith("/") ? values.root : `${values.root}/`),
      );
    }
    const stores = [["engine", false], ["all", true]] as Array<[string, boolean]>;
    if (values.calibrate && values.mode === "paired") stores.push(["twin", false]);
    if (values.apisec && values.mode === "paired") stores.push(["apisec", false]);
    for (const [name, all] of stores) {
      await Deno.mkdir(`${dir}/${name}`, { recursive: true });
      seed(`${dir}/${name}`, `http://127.0.0.1:${upPort}`, all);
    }
    const rounds = Number(values.rounds);
    return values.mode === "paired"
      ? await paired(dir, o, rounds, values.calibrate, values.apisec)
      : await alternate(dir, o, rounds);
  } finally {
    upstream.kill("SIGTERM");
    await upstream.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
