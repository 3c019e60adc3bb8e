/**
 * The burst case of `bench:protection --burst` (issue #22, item 6): data-plane throughput while a
 * management client writes, against the same server without writes, in one run. Two identical
 * servers, each with the report's policy of about 550 objects (150 sites, 200 IP entries, 150
 * custom rules, 50 ACL rules) besides the benchmark site, are loaded by wrk at the same moment;
 * in each round one of them (alternating) also gets bursts of 100 sequential writes over the
 * management API (an IP entry created, then deleted), one burst after the other until the round
 * ends. The verdict is the median of the rounds' written/quiet throughput ratios (target: above
 * 70 %). `--calibrate` first runs rounds without writes (the method's noise floor). `--root DIR`
 * runs the servers from another checkout (the "before" figures), seeded by this one.
 */
import { siteInputSchema } from "../mod/data_plane/site_schema.ts";
import { KIND } from "../mod/protection/protection_compile.ts";
import {
  aclRuleSchema,
  customRuleSchema,
  ipEntrySchema,
} from "../mod/protection/protection_schema.ts";
import { cpuTicks, median, run } from "./bench_kit.ts";
import { login, startWaf, type Waf } from "./bench_login_flood.ts";
import { seedStore } from "./bench_seed.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const WHO = { actor: { type: "cli" as const, name: "bench_policy_burst" } };
const BURST = 100;

/** The report's ~550 policy objects, none matching the benign mix (the site comes later). */
function seedPolicy(dataDir: string): void {
  seedStore(dataDir, ({ sites, objects: o }) => {
    for (let i = 0; i < 150; i++) {
      sites.create(
        siteInputSchema.parse({
          name: `site${i}`,
          hosts: [`site${i}.bench`],
          upstreams: [`http://127.0.0.1:${20_000 + i}`],
        }),
        WHO,
      );
    }
    for (let i = 0; i < 200; i++) {
      const cidr = `10.9.${i >> 8}.${i & 255}`;
      o.create(
        { kind: KIND.ip, audit: "bench" },
        ipEntrySchema.parse({ action: "block", cidr }),
        WHO,
      );
    }
    for (let i = 0; i < 150; i++) {
      o.create(
        { kind: KIND.custom, audit: "bench" },
        customRuleSchema.parse({
          name: `custom ${i}`,
          target: { kind: "any_param" },
          pattern: `evil${i}[0-9]+`,
          action: "block",
          priority: i,
        }),
        WHO,
      );
    }
    for (let i = 0; i < 50; i++) {
      const path = { regex: `^/admin${i}/` };
      const conditions = { methods: ["PUT"], path };
      o.create(
        { kind: KIND.acl, audit: "bench" },
        aclRuleSchema.parse({ name: `acl ${i}`, action: "block", conditions }),
        WHO,
      );
    }
  });
}

export interface Server extends Waf {
  readonly name: string;
  readonly port: number;
  readonly session: { cookie: string; csrf: string };
}

/** A seeded `waf serve` (from `root`) with the benchmark site and an administrator signed in. */
export async function startServer(
  dir: string,
  name: string,
  upstream: string,
  root = ROOT,
): Promise<Server> {
  const dataDir = `${dir}/${name}`;
  await Deno.mkdir(dataDir, { recursive: true });
  seedPolicy(dataDir);
  const waf = await startWaf(root, dataDir, upstream);
  return { ...waf, name, port: Number(new URL(waf.data).port), session: await login(waf.mgmt) };
}

/** Bursts of 100 sequential writes (create, delete) until `stop`; the writes done. */
export async function writer(s: Server, stop: { done: boolean }): Promise<number> {
  const headers = {
    "content-type": "application/json",
    cookie: s.session.cookie,
    "x-csrf-token": s.session.csrf,
  };
  let writes = 0;
  let n = 0;
  while (!stop.done) {
    for (let i = 0; i < BURST / 2 && !stop.done; i++) {
      const created = await fetch(`${s.mgmt}/api/protection/ip-lists`, {
        method: "POST",
        headers,
        body: JSON.stringify({ action: "block", cidr: `172.16.${(n >> 8) & 255}.${n & 255}` }),
      });
      n++;
      if (created.status !== 201) {
        throw new Error(`write: ${created.status} ${await created.text()}`);
      }
      const { id } = await created.json() as { id: string };
      const removed = await fetch(`${s.mgmt}/api/protection/ip-lists/${id}`, {
        method: "DELETE",
        headers,
      });
      await removed.body?.cancel();
      if (removed.status >= 300) throw new Error(`delete: ${removed.status}`);
      writes += 2;
    }
  }
  return writes;
}

async function wrk(dir: string, port: number, mix: string, o: WrkOptions): Promise<number> {
  const r = await run("wrk", [
    `-t${o.threads}`,
    `-c${o.connections}`,
    `-d${o.duration}s`,
    "-s",
    `${dir}/${mix}.lua`,
    `http://127.0.0.1:${port}`,
  ]);
  if (r.code !== 0) throw new Error(`wrk failed:\n${r.out}`);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(r.out)?.[1] ?? NaN);
}

type WrkOptions = { threads: number; connections: number; duration: number };

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** The burst case; `dir` holds the wrk mix (`mix.lua`); returns the verdict (0 when met). */
export async function burstCase(
  dir: string,
  upstream: string,
  o: WrkOptions,
  rounds: number,
  calibrate: boolean,
  root = ROOT,
): Promise<number> {
  const half = {
    ...o,
    threads: Math.max(1, o.threads >> 1),
    connections: Math.max(1, o.connections >> 1),
  };
  const servers: Server[] = [];
  try {
    servers.push(await startServer(dir, "burst-a", upstream, root));
    servers.push(await startServer(dir, "burst-b", upstream, root));
    const [a, b] = servers as [Server, Server];
    await Promise.all([a, b].map((s) => wrk(dir, s.port, "mix", { ...half, duration: 2 })));
    const round = async (written: Server | undefined) => {
      const stop = { done: false };
      const before = { a: cpuTicks(a.child.pid), b: cpuTicks(b.child.pid) };
      const writing = written ? writer(written, stop) : Promise.resolve(0);
      const [ra, rb] = await Promise.all([
        wrk(dir, a.port, "mix", half),
        wrk(dir, b.port, "mix", half),
      ]);
      stop.done = true;
      const writes = await writing;
      return { ra, rb, writes, cpu: { a: cpuTicks(a.child.pid) - before.a } };
    };
    if (calibrate) {
      const floor: number[] = [];
      for (let i = 0; i < rounds; i++) {
        const r = await round(undefined);
        floor.push(r.rb / r.ra);
        console.log(`calibration ${i + 1}  a ${r.ra.toFixed(0)} req/s, b ${r.rb.toFixed(0)} req/s`);
      }
      console.log(`noise floor: b / a median ${pct(median(floor))}\n`);
    }
    const ratios: number[] = [];
    const rates: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const written = i % 2 === 0 ? a : b;
      const r = await round(written);
      const [w, q] = written === a ? [r.ra, r.rb] : [r.rb, r.ra];
      ratios.push(w / q);
      rates.push(r.writes / o.duration);
      console.log(
        `round ${i + 1}  written (${written.name}) ${w.toFixed(0)} req/s, quiet ${
          q.toFixed(0)
        } req/s, ratio ${pct(w / q)}; ${r.writes} writes (${(r.writes / o.duration).toFixed(0)}/s)`,
      );
    }
    const verdict = median(ratios);
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    console.log(
      `\nburst of ${BURST} writes: data plane at ${
        pct(verdict)
      } of its quiet rate (median of ${rounds} paired rounds, ${pct(Math.min(...ratios))} to ${
        pct(Math.max(...ratios))
      }), writes ${median(rates).toFixed(0)}/s (target > 70%)`,
    );
    console.log(`load average at the end: ${load}`);
    return verdict > 0.7 ? 0 : 1;
  } finally {
    for (const s of servers) {
      s.child.kill("SIGTERM");
      await s.child.status;
    }
  }
}
