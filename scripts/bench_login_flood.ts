/**
 * Does an unauthenticated login flood slow the data plane? Two identical `waf serve` processes
 * (a site in front of a small upstream, an administrator account), each loaded by its own wrk at
 * the same moment; in each round one of them (alternating) is also flooded by a third wrk with
 * `POST /api/auth/login` and wrong passwords from one address (most for `admin`, some for
 * rotating usernames, as a guesser would). The verdict is the median of the rounds' flooded /
 * quiet ratios (target >= 90%, issue #22.3). Afterwards it reports the audit
 * records the flood left and the sum of their counts.
 *
 * ```sh
 * deno task bench:login-flood [--duration 10] [--rounds 5] [--connections 20] [--flood 16]
 *                             [--root DIR] [--calibrate]
 * ```
 *
 * `--root` runs another checkout's `main.ts` (e.g. a worktree of an older commit) to measure
 * the code before a change with the same harness. wrk is installed with apt-get when missing.
 */
import { parseArgs } from "node:util";
import { DatabaseSync } from "node:sqlite";
import { ensure, freePort, run, waitForPort } from "./bench_kit.ts";
import { SERVER_V8_FLAGS } from "./server_flags.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const PASSWORD = "Correct-Horse-9";

const DATA_LUA = `
request = function()
  return wrk.format("GET", "/products/42?ref=home", {["Host"]="shop.bench", ["User-Agent"]="Mozilla/5.0 Chrome/126.0"})
end
`;

// Mostly the administrator's name, sometimes another: lockouts, CAPTCHA refusals, unknown users.
const FLOOD_LUA = `
local n = 0
request = function()
  n = n + 1
  local user = "admin"
  if n % 4 == 0 then user = "user" .. (n % 1000) end
  local body = '{"username":"' .. user .. '","password":"Wrong-Pass-' .. n .. 'x"}'
  return wrk.format("POST", "/api/auth/login", {["Content-Type"]="application/json"}, body)
end
`;

async function wrk(
  url: string,
  script: string,
  o: { threads: number; connections: number; duration: number },
  expect2xx: boolean,
): Promise<number> {
  const r = await run("wrk", [
    `-t${o.threads}`,
    `-c${o.connections}`,
    `-d${o.duration}s`,
    "-s",
    script,
    url,
  ]);
  if (r.code !== 0) throw new Error(`wrk failed:\n${r.out}`);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(r.out)?.[1] ?? 0);
  if (expect2xx && non2xx > 0) throw new Error(`${non2xx} data-plane requests were not 2xx`);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(r.out)?.[1] ?? NaN);
}

async function cli(root: string, dataDir: string, args: string[], stdin = ""): Promise<void> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${root}main.ts`, ...args, "--data-dir", dataDir],
    stdin: "piped",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(stdin));
  await w.close();
  const out = await child.output();
  if (out.code !== 0) {
    throw new Error(`waf ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

export async function login(mgmt: string): Promise<{ cookie: string; csrf: string }> {
  const r = await fetch(`${mgmt}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "admin", password: PASSWORD }),
  });
  if (r.status !== 200) throw new Error(`login: ${r.status} ${await r.text()}`);
  const cookies = r.headers.getSetCookie().map((c) => c.split(";")[0]!);
  const csrf = cookies.find((c) => c.startsWith("waf_csrf="))!.slice("waf_csrf=".length);
  await r.body?.cancel();
  return { cookie: cookies.join("; "), csrf };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

export interface Waf {
  readonly dir: string;
  readonly data: string;
  readonly mgmt: string;
  readonly child: Deno.ChildProcess;
}

/** A small upstream process on `port` that answers every request `200 ok`. */
export function startOkUpstream(port: number): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `Deno.serve({hostname:"127.0.0.1",port:${port},onListen(){}},()=>new Response("ok"))`,
    ],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
}

/** Adds the administrator `waf serve` will know (before it starts, on its data directory). */
export function ensureAdmin(root: string, dataDir: string): Promise<void> {
  return cli(root, dataDir, ["user", "ensure-admin", "admin", "--password-stdin"], `${PASSWORD}\n`);
}

/**
 * Once a starting `waf serve` listens on both ports, logs in as that administrator and adds the
 * benchmark site `host` in front of `upstream`; the management plane's URL.
 */
export async function siteWhenUp(
  dataPort: number,
  mgmtPort: number,
  host: string,
  upstream: string,
): Promise<string> {
  await waitForPort(dataPort, "waf data plane");
  await waitForPort(mgmtPort, "waf management plane");
  const mgmt = `http://127.0.0.1:${mgmtPort}`;
  const s = await login(mgmt);
  const site = await fetch(`${mgmt}/api/sites`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: s.cookie, "x-csrf-token": s.csrf },
    body: JSON.stringify({ name: "shop", hosts: [host], upstreams: [upstream] }),
  });
  if (site.status !== 201) throw new Error(`site: ${site.status} ${await site.text()}`);
  await site.body?.cancel();
  return mgmt;
}

/** A `waf serve` with an administrator and the benchmark site. */
export async function startWaf(root: string, dir: string, upstream: string): Promise<Waf> {
  const dataPort = freePort();
  const mgmtPort = freePort();
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    `server:\n  data:\n    listen: "127.0.0.1:${dataPort}"\n  management:\n    listen: "127.0.0.1:${mgmtPort}"\nlogging:\n  level: warn\n`,
  );
  await ensureAdmin(root, dir);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVER_V8_FLAGS, `${root}main.ts`, "serve", "--data-dir", dir],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const mgmt = await siteWhenUp(dataPort, mgmtPort, "shop.bench", upstream);
  return { dir, data: `http://127.0.0.1:${dataPort}/`, mgmt, child };
}

/** The refused-login audit records a server left, and how many refusals they stand for. */
function auditOf(dir: string): { records: number; refusals: number } {
  const db = new DatabaseSync(`${dir}/waf.db`, { readOnly: true });
  try {
    const hasCount = db.prepare(
      "SELECT 1 FROM pragma_table_info('audit_log') WHERE name = 'count'",
    ).get() !== undefined;
    const r = db.prepare(
      `SELECT COUNT(*) AS n, ${hasCount ? "SUM(count)" : "COUNT(*)"} AS events FROM audit_log
       WHERE action = 'auth.login' AND result = 'failure'`,
    ).get() as { n: number; events: number | null };
    return { records: r.n, refusals: r.events ?? 0 };
  } finally {
    db.close();
  }
}

/**
 * Two identical servers loaded at the same moment, each by its own wrk; in each round one of
 * them (alternating) is also flooded. A neighbour that slows the shared machine slows both
 * sides of the ratio; `--calibrate` first runs rounds without any flood (the noise floor).
 */
export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      duration: { type: "string", default: "10" },
      rounds: { type: "string", default: "6" },
      connections: { type: "string", default: "20" },
      flood: { type: "string", default: "16" },
      root: { type: "string", default: ROOT },
      calibrate: { type: "boolean", default: false },
    },
  });
  const root = values.root.endsWith("/") ? values.root : `${values.root}/`;
  const duration = Number(values.duration);
  await ensure("wrk", "wrk");
  const dir = await Deno.makeTempDir({ prefix: "waf-bench-flood-" });
  const upPort = freePort();
  const upstream = startOkUpstream(upPort);
  const servers: Waf[] = [];
  try {
    await Deno.writeTextFile(`${dir}/data.lua`, DATA_LUA);
    await Deno.writeTextFile(`${dir}/flood.lua`, FLOOD_LUA);
    await waitForPort(upPort, "upstream");
    for (const name of ["a", "b"]) {
      servers.push(await startWaf(root, `${dir}/${name}`, `http://127.0.0.1:${upPort}`));
    }
    const load = { threads: 1, connections: Number(values.connections), duration };
    const flood = { threads: 1, connections: Number(values.flood), duration };
    const both = (flooded: Waf | undefined, d = duration) =>
      Promise.all([
        wrk(servers[0]!.data, `${dir}/data.lua`, { ...load, duration: d }, true),
        wrk(servers[1]!.data, `${dir}/data.lua`, { ...load, duration: d }, true),
        flooded ? wrk(`${flooded.mgmt}/`, `${dir}/flood.lua`, flood, false) : Promise.resolve(0),
      ]);
    await both(undefined, 2);
    if (values.calibrate) {
      const noise: number[] = [];
      for (let round = 1; round <= Number(values.rounds); round++) {
        const [a, b] = await both(undefined);
        noise.push(b / a);
        console.log(`calibration ${round}  a ${a.toFixed(0)} req/s, b ${b.toFixed(0)} req/s`);
      }
      console.log(`no flood, b / a: median ${pct(median(noise))} (the method's noise)\n`);
    }
    const ratios: number[] = [];
    const floodRates: number[] = [];
    for (let round = 1; round <= Number(values.rounds); round++) {
      const target = round % 2 ? 1 : 0;
      const results = await both(servers[target]);
      const busy = results[target]!;
      const quiet = results[1 - target]!;
      ratios.push(busy / quiet);
      floodRates.push(results[2]!);
      console.log(
        `round ${round}  quiet ${quiet.toFixed(0)} req/s, under flood ${busy.toFixed(0)} req/s ` +
          `(ratio ${pct(busy / quiet)}), flood answered ${results[2]!.toFixed(0)} req/s`,
      );
    }
    for (const s of servers.splice(0)) {
      s.child.kill("SIGTERM");
      await s.child.status;
    }
    const audits = ["a", "b"].map((n) => auditOf(`${dir}/${n}`));
    const verdict = median(ratios);
    console.log(
      `\ndata plane under flood / quiet: median ${pct(verdict)} (ratios ${
        pct(Math.min(...ratios))
      } to ${pct(Math.max(...ratios))}), target >= 90%`,
    );
    console.log(`flood: median ${median(floodRates).toFixed(0)} answers/s from one address`);
    console.log(
      `audit: ${
        audits.reduce((n, a) => n + a.records, 0)
      } auth.login failure records standing for ${
        audits.reduce((n, a) => n + a.refusals, 0)
      } refusals`,
    );
    return verdict >= 0.9 ? 0 : 1;
  } finally {
    for (const s of servers) {
      s.child.kill("SIGTERM");
      await s.child.status;
    }
    upstream.kill("SIGTERM");
    await upstream.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
