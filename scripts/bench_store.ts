/**
 * The management store on PostgreSQL against SQLite, in one run, through real `waf serve`
 * processes: a `temporary` controller (SQLite) and two `production` controllers (A and B) on one
 * PostgreSQL schema of the run's own (dropped after), all three in front of one small upstream.
 *
 * 1. The common management calls, each timed on the SQLite controller and on controller A, the
 *    order alternating every round: sign-in (`POST /api/auth/login`), the session
 *    (`GET /api/auth/session`), the sites list, an IP-list entry created (its answer waits for
 *    the policy build containing it) and the attack log's first page (50 rows; on production the
 *    deployment-wide table). Median, p99 and PostgreSQL / SQLite; target: reads within 2x.
 * 2. A write's propagation: an IP-list entry created on controller B, then controller A's data
 *    plane asked for the entry's address (`X-Forwarded-For` from a trusted loopback peer) until
 *    it answers 403; the time from sending the write, and from B's answer. Target: p99 <= 1 s.
 *    On a shared machine the ratios are the measure, not the milliseconds.
 *
 * ```sh
 * deno task bench:store [--rounds 40] [--writes 50] [--records 150] \
 *   [--dsn postgres://postgres@127.0.0.1:5432/test]
 * ```
 */
import { parseArgs } from "node:util";
import postgres from "postgres";
import { freePort, loadAverage, median, waitForPort } from "./bench_kit.ts";
import { ensureAdmin, login, startOkUpstream } from "./bench_login_flood.ts";
import { SERVER_V8_FLAGS } from "./server_flags.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const HOST = "shop.bench";
const ENCODER = new TextEncoder();
const DECODER = new TextDecoder();

interface Controller {
  readonly name: string;
  readonly dataPort: number;
  readonly mgmt: string;
  readonly child: Deno.ChildProcess;
  session: { cookie: string; csrf: string };
}

interface Op {
  readonly name: string;
  readonly read: boolean;
  readonly run: (c: Controller, i: number) => Promise<void>;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The `q` quantile of `xs` (nearest rank). */
function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

async function call(c: Controller, method: string, path: string, body?: unknown) {
  const r = await fetch(`${c.mgmt}${path}`, {
    method,
    headers: {
      cookie: c.session.cookie,
      "x-csrf-token": c.session.csrf,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${c.name} ${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text || "null");
}

/**
 * What controller `c`'s data plane answers a request from `ip` (via a trusted loopback peer).
 * Over a socket of its own: `fetch` replaces a Host header with the URL's.
 */
async function dataStatus(c: Controller, ip: string, path = "/"): Promise<number> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: c.dataPort });
  try {
    await conn.write(ENCODER.encode(
      `GET ${path} HTTP/1.1\r\nHost: ${HOST}\r\nX-Forwarded-For: ${ip}\r\nConnection: close\r\n\r\n`,
    ));
    const buf = new Uint8Array(64);
    let head = "";
    while (!head.includes("\r\n")) {
      const n = await conn.read(buf);
      if (n === null) break;
      head += DECODER.decode(buf.subarray(0, n));
    }
    return Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  } finally {
    conn.close();
  }
}

async function startController(name: string, dir: string, yaml: string): Promise<Controller> {
  const dataPort = freePort();
  const mgmtPort = freePort();
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    `server:\n  data:\n    listen: "127.0.0.1:${dataPort}"\n    workers: 1\n` +
      `  management:\n    listen: "127.0.0.1:${mgmtPort}"\nlogging:\n  level: warn\n${yaml}`,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVER_V8_FLAGS, `${ROOT}main.ts`, "serve", "--data-dir", dir],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  await waitForPort(dataPort, `${name} data plane`);
  await waitForPort(mgmtPort, `${name} management plane`);
  return {
    name,
    dataPort,
    mgmt: `http://127.0.0.1:${mgmtPort}`,
    child,
    session: { cookie: "", csrf: "" },
  };
}

/** Waits until `check` holds, polling every `everyMs`; false after `timeoutMs`. */
async function until(check: () => Promise<boolean>, timeoutMs: number, everyMs = 50) {
  const end = performance.now() + timeoutMs;
  while (performance.now() < end) {
    if (await check()) return true;
    await pause(everyMs);
  }
  return false;
}

const OPS: Op[] = [
  {
    name: "login (POST /api/auth/login)",
    read: false,
    run: async (c) => {
      await login(c.mgmt);
    },
  },
  {
    name: "session (GET /api/auth/session)",
    read: true,
    run: async (c) => void await call(c, "GET", "/api/auth/session"),
  },
  {
    name: "list sites (GET /api/sites)",
    read: true,
    run: async (c) => void await call(c, "GET", "/api/sites"),
  },
  {
    name: "create IP-list entry (POST)",
    read: false,
    run: async (c, i) =>
      void await call(c, "POST", "/api/protection/ip-lists", {
        action: "block",
        cidr: `198.18.${(i >> 8) & 255}.${i & 255}/32`,
        note: "bench",
      }),
  },
  {
    name: "attack log page (GET /api/logs, 50)",
    read: true,
    run: async (c) => void await call(c, "GET", "/api/logs?action=block,challenge,log&limit=50"),
  },
];

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      rounds: { type: "string", default: "40" },
      writes: { type: "string", default: "50" },
      records: { type: "string", default: "150" },
      dsn: { type: "string", default: "postgres://postgres@127.0.0.1:5432/test" },
    },
  });
  const rounds = Number(values.rounds);
  const writes = Number(values.writes);
  const dsn = values.dsn!;
  const schema = `bench_store_${crypto.randomUUID().replaceAll("-", "").slice(0, 8)}`;
  const sql = postgres(dsn, { max: 1, onnotice: () => {} });
  const dir = await Deno.makeTempDir({ prefix: "waf-bench-store-" });
  const upPort = freePort();
  const upstream = startOkUpstream(upPort);
  const controllers: Controller[] = [];
  try {
    await sql.unsafe(`CREATE SCHEMA ${schema}`);
    await waitForPort(upPort, "upstream");
    console.log(`load ${loadAverage()}; starting three controllers (schema ${schema}) ...`);
    const production = `storage:\n  profile: production\n  production:\n` +
      `    postgresql:\n      dsn: ${JSON.stringify(dsn)}\n      schema: ${schema}\n` +
      `    secrets_file: ${dir}/deployment.key\n`;
    await Deno.mkdir(`${dir}/sqlite`);
    await Deno.writeTextFile(`${dir}/sqlite/waf.yaml`, "logging:\n  level: warn\n");
    await ensureAdmin(ROOT, `${dir}/sqlite`);
    const lite = await startController("SQLite", `${dir}/sqlite`, "");
    controllers.push(lite);
    // A creates the deployment and its key file; the administrator goes into the shared store.
    const a = await startController("PostgreSQL A", `${dir}/a`, production);
    controllers.push(a);
    await ensureAdmin(ROOT, `${dir}/a`);
    const b = await startController("PostgreSQL B", `${dir}/b`, production);
    controllers.push(b);
    for (const c of controllers) c.session = await login(c.mgmt);
    const site = {
      name: "shop",
      hosts: [HOST],
      upstreams: [`http://127.0.0.1:${upPort}`],
      trusted_proxies: ["127.0.0.1/32"],
    };
    await call(lite, "POST", "/api/sites", site);
    await call(a, "POST", "/api/sites", site);
    for (const c of controllers) {
      if (!await until(async () => await dataStatus(c, "192.0.2.1") === 200, 10_000)) {
        throw new Error(`${c.name}'s data plane does not serve the site`);
      }
    }
    // Attack-log records on every data plane (on production read from the shipped table).
    const attack = "/products?id=1%27%20union%20select%20password%20from%20users--";
    for (const c of controllers) {
      for (let i = 0; i < Number(values.records); i++) {
        if (await dataStatus(c, `192.0.2.${i % 200 + 1}`, attack) !== 403) {
          throw new Error(`${c.name} did not block the attack`);
        }
      }
    }
    const pageFull = async (c: Controller) =>
      (await call(c, "GET", "/api/logs?action=block&limit=50")).items.length === 50;
    for (const c of [lite, a]) {
      if (!await until(() => pageFull(c), 30_000, 200)) {
        throw new Error(`${c.name}'s attack log has fewer than 50 records`);
      }
    }

    // 1. The management calls, SQLite and A alternating.
    const sides = [lite, a];
    const times = new Map<string, number[]>();
    for (const op of OPS) {
      for (const side of sides) times.set(`${op.name}|${side.name}`, []);
      for (const side of sides) for (let w = 0; w < 3; w++) await op.run(side, 60_000 + w);
    }
    for (let i = 0; i < rounds; i++) {
      for (const op of OPS) {
        for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
          const t0 = performance.now();
          await op.run(side, i);
          times.get(`${op.name}|${side.name}`)!.push(performance.now() - t0);
        }
      }
    }

    // 2. A write on B until A's data plane blocks its address.
    const fromSend: number[] = [];
    const fromAck: number[] = [];
    let lost = 0;
    for (let i = 0; i < writes; i++) {
      const ip = `100.64.${(i >> 8) & 255}.${i & 255}`;
      if (await dataStatus(a, ip) !== 200) throw new Error(`${ip} is blocked before the write`);
      const t0 = performance.now();
      const write = call(b, "POST", "/api/protection/ip-lists", {
        action: "block",
        cidr: `${ip}/32`,
        note: "propagation",
      }).then(() => performance.now());
      const blocked = await until(async () => await dataStatus(a, ip) === 403, 10_000, 2);
      const t1 = performance.now();
      const acked = await write;
      if (!blocked) {
        lost++;
        continue;
      }
      fromSend.push(t1 - t0);
      fromAck.push(t1 - acked);
    }

    const load = loadAverage();
    const ms = (x: number) => `${x.toFixed(1)} ms`;
    console.log(`\nload ${load}; ${rounds} rounds, ${writes} propagated writes\n`);
    console.log(
      "| call | SQLite median / p99 | PostgreSQL median / p99 | PG / SQLite (median) |",
    );
    console.log(
      "| ---- | ------------------- | ----------------------- | -------------------- |",
    );
    const readRatios: number[] = [];
    for (const op of OPS) {
      const s = times.get(`${op.name}|${lite.name}`)!;
      const p = times.get(`${op.name}|${a.name}`)!;
      const ratio = median(p) / median(s);
      if (op.read) readRatios.push(ratio);
      console.log(
        `| ${op.name} | ${ms(median(s))} / ${ms(quantile(s, 0.99))} | ${ms(median(p))} / ${
          ms(quantile(p, 0.99))
        } | ${ratio.toFixed(2)}x |`,
      );
    }
    console.log("\n| propagation B -> A's data plane | median | p99 | max |");
    console.log("| ------------------------------- | ------ | --- | --- |");
    for (const [label, xs] of [["from the write sent", fromSend], ["from B's answer", fromAck]]) {
      const v = xs as number[];
      if (v.length === 0) continue;
      console.log(
        `| ${label} | ${ms(median(v))} | ${ms(quantile(v, 0.99))} | ${ms(Math.max(...v))} |`,
      );
    }
    const worstRead = Math.max(...readRatios);
    const p99 = fromSend.length > 0 ? quantile(fromSend, 0.99) : Infinity;
    const readsMet = worstRead <= 2;
    const propagationMet = lost === 0 && p99 <= 1000;
    console.log(
      `\nreads within 2x of SQLite: ${readsMet ? "met" : "not met"} (worst read ${
        worstRead.toFixed(2)
      }x)`,
    );
    console.log(
      `write propagation p99 <= 1 s: ${propagationMet ? "met" : "not met"} (p99 ${ms(p99)}${
        lost > 0 ? `, ${lost} writes not seen within 10 s` : ""
      })`,
    );
    return readsMet && propagationMet ? 0 : 1;
  } finally {
    for (const c of controllers.reverse()) {
      c.child.kill("SIGTERM");
      await c.child.status;
    }
    upstream.kill("SIGTERM");
    await upstream.status;
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await sql.end({ timeout: 2 });
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
