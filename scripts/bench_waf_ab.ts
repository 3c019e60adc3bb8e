/**
 * The WAF's whole request path as an A/B under wrk: two (or more) checkouts' servers (`main.ts
 * serve`, the benchmark sites of `bench_proxy.ts`, the connection front on, one data-plane
 * worker) in front of one nginx upstream, measured in alternated wrk rounds. Each round reports
 * the server's CPU time (all its threads, from /proc) per request and its req/s. Unlike
 * `bench_request_ab.ts`, the sockets, the HTTP server and the kernel's loopback work are in the
 * measurement, the way they are in production; the CPU per request moves much less with the
 * machine's load than req/s does.
 *
 * ```sh
 * git archive main | (mkdir -p /tmp/waf-a && tar -x -C /tmp/waf-a)
 * deno run -A scripts/bench_waf_ab.ts --sides /tmp/waf-a,. [--host on.bench] [--mix benign]
 *                                      [--rounds 6] [--duration 5] [--connections 50]
 *                                      [--fill 1000000] [--max-records 1000000]
 * ```
 *
 * `--hosts on.bench,off.bench` instead of `--host` measures every checkout on each host, each
 * pair in its own server (its own fresh store), and prints what protection costs a request in
 * each checkout: the CPU on the block-mode site minus the CPU on the site with protection off.
 *
 * Besides the whole process it reports the median CPU per request of each thread (`main`: the
 * event loop; `worker-1`: the access-log writer), from /proc/<pid>/task, and the main thread's
 * kernel time (`main (kernel)`, part of `main`: its socket reads and writes). `--fill N` starts every
 * side with N access-log rows already stored (the writer's cost grows with the table, and at
 * `max_records` each insert also deletes); `--max-records` sets `storage.access_logs.max_records`.
 */
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import {
  ATTACK,
  BENIGN,
  measured,
  startNginxUpstream,
  startWaf,
  wrk,
  wrkScript,
} from "./bench_proxy.ts";
import {
  alternate,
  benignRecord,
  ensure,
  freePort,
  loadAverage,
  median,
  threadTicks,
} from "./bench_kit.ts";

/** The resident set of `pid` in MB (0 when it cannot be read). */
function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

/**
 * The kernel's share (system time, in clock ticks) of the main thread of `pid`: the socket
 * writes and reads the event loop makes; 0 when it cannot be read.
 */
function mainKernelTicks(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/task/${pid}/stat`);
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[12]);
  } catch {
    return 0;
  }
}

/**
 * Stores `rows` access-log records (a benign GET's, time-ordered trace ids, the newest a minute
 * old) in the store of `dataDir`, as if the WAF had been serving for a while.
 */
function fillAccessLog(dataDir: string, rows: number): void {
  const db = new DatabaseSync(`${dataDir}/waf.db`);
  const t0 = Date.now() - 60_000 - Math.ceil(rows / 10);
  const record = JSON.stringify(benignRecord("0".repeat(32), t0));
  try {
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < :rows)
       INSERT INTO access_logs
         (trace_id, time, site_id, client_ip, method, host, path, status, action, attack_class,
          record)
       SELECT printf('%012x%020x', :t0 + i / 10, i), :t0 + i / 10, 'site', '127.0.0.1', 'GET',
         'on.bench', '/products', 200, 'pass', NULL, :record
       FROM n`,
    ).run({ rows, t0, record });
  } finally {
    db.close();
  }
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      sides: { type: "string" },
      host: { type: "string", default: "on.bench" },
      hosts: { type: "string" },
      mix: { type: "string", default: "benign" },
      rounds: { type: "string", default: "6" },
      duration: { type: "string", default: "5" },
      connections: { type: "string", default: "50" },
      fill: { type: "string", default: "0" },
      "max-records": { type: "string" },
    },
  });
  const fill = Number(values.fill);
  const maxRecords = values["max-records"];
  const roots = (values.sides ?? "").split(",").filter(Boolean).map((p) => resolve(p) + "/");
  if (roots.length < 2) {
    console.error("usage: bench_waf_ab.ts --sides <checkout A>,<checkout B>[,...]");
    return 2;
  }
  await ensure("wrk", "wrk");
  await ensure("nginx", "nginx-light");
  const mix = values.mix === "attack"
    ? ATTACK
    : values.mix === "get"
    ? BENIGN.filter(([method]) => method === "GET")
    : BENIGN;
  const dir = await Deno.makeTempDir({ prefix: "waf-wrk-ab-" });
  const upPort = freePort();
  const upstream = await startNginxUpstream(dir, upPort);
  const hosts = (values.hosts ?? values.host).split(",").filter(Boolean);
  const sides: Array<
    { name: string; pid: number; url: string; child: Deno.ChildProcess; script: string }
  > = [];
  const opts = { threads: 2, connections: Number(values.connections), duration: 2 };
  try {
    for (const [i, root] of roots.entries()) {
      for (const host of hosts) {
        const port = freePort();
        const side = String.fromCharCode(65 + i);
        const name = hosts.length > 1 ? `${side}@${host}` : side;
        const child = await startWaf(
          dir,
          `http://127.0.0.1:${upPort}`,
          port,
          freePort(),
          "1",
          [],
          root,
          {
            name: `waf-${name}`,
            extra: maxRecords === undefined
              ? ""
              : `storage:\n  access_logs:\n    max_records: ${Number(maxRecords)}\n`,
            prepare: fill > 0 ? (d) => fillAccessLog(d, fill) : undefined,
          },
        );
        console.log(`${name}: ${root}`);
        const script = wrkScript(mix, host);
        sides.push({ name, pid: child.pid, url: `http://127.0.0.1:${port}`, child, script });
      }
    }
    for (const s of sides) await wrk(dir, s.url, s.script, opts);
    console.log(`load average before: ${loadAverage()}`);
    const rps = new Map<string, number[]>(sides.map((s) => [s.name, []]));
    /** Per side: the resident set (MB) after each round. */
    const rss = new Map<string, number[]>();
    /** Per side, per thread name: µs CPU a request in each round. */
    const perThread = new Map<string, Map<string, number[]>>(sides.map((s) => [s.name, new Map()]));
    const cpuRounds = new Map<string, number[]>(sides.map((s) => [s.name, []]));
    const cpu = await alternate(sides, Number(values.rounds), "µs CPU a request", async (s) => {
      const before = threadTicks(s.pid);
      const kernelBefore = mainKernelTicks(s.pid);
      const r = await measured(s.pid, dir, s.url, s.script, {
        ...opts,
        duration: Number(values.duration),
      });
      const threads = perThread.get(s.name)!;
      for (const [name, ticks] of threadTicks(s.pid)) {
        const us = ((ticks - (before.get(name) ?? 0)) * 10_000) / Math.max(1, r.requests);
        const key = name === "main" || name.startsWith("worker-") ? name : "other threads";
        const xs = threads.get(key) ?? [];
        if (xs.length < rps.get(s.name)!.length + 1) xs.push(0);
        xs[xs.length - 1]! += us;
        threads.set(key, xs);
      }
      const kernel = threads.get("main (kernel)") ?? [];
      kernel.push(((mainKernelTicks(s.pid) - kernelBefore) * 10_000) / Math.max(1, r.requests));
      threads.set("main (kernel)", kernel);
      rss.set(s.name, [...rss.get(s.name) ?? [], rssMb(s.pid)]);
      if (r.non2xx > 0 && values.mix !== "attack") {
        throw new Error(`${s.name}: ${r.non2xx} answers were not 2xx`);
      }
      rps.get(s.name)!.push(r.rps);
      cpuRounds.get(s.name)!.push(r.cpuUs ?? Number.NaN);
      return r.cpuUs ?? Number.NaN;
    });
    console.log(
      `req/s (median): ${[...rps].map(([n, xs]) => `${n} ${median(xs).toFixed(0)}`).join("  ")}`,
    );
    // Each checkout against the first on the same host: the ratio of the medians, and in how
    // many rounds it was lower (the rounds ran back to back, so this holds at any load; with
    // `--hosts`, alternate()'s own "B/A" compares the first two servers, two hosts of A).
    for (const host of hosts) {
      const suffix = hosts.length > 1 ? `@${host}` : "";
      const base = cpuRounds.get(`A${suffix}`)!;
      for (let i = 1; i < roots.length; i++) {
        const name = `${String.fromCharCode(65 + i)}${suffix}`;
        const xs = cpuRounds.get(name)!;
        const lower = xs.filter((v, r) => v < base[r]!).length;
        const ratio = (cpu.get(name)! / cpu.get(`A${suffix}`)!) * 100;
        console.log(
          `${name} against A${suffix}: ${ratio.toFixed(1)} % of the CPU a request (medians), ` +
            `lower in ${lower} of ${xs.length} rounds`,
        );
      }
    }
    if (hosts.length === 2) {
      // What the first host's site costs over the second's, per checkout: the difference of the
      // medians, and the median of the differences within each round (the two ran back to back).
      for (let i = 0; i < roots.length; i++) {
        const side = String.fromCharCode(65 + i);
        const on = cpuRounds.get(`${side}@${hosts[0]}`)!;
        const off = cpuRounds.get(`${side}@${hosts[1]}`)!;
        const diff = cpu.get(`${side}@${hosts[0]}`)! - cpu.get(`${side}@${hosts[1]}`)!;
        const perRound = median(on.map((v, r) => v - off[r]!));
        console.log(
          `${side}: ${hosts[0]} minus ${hosts[1]}: ${diff.toFixed(2)} µs CPU a request ` +
            `(median of the rounds' differences ${perRound.toFixed(2)})`,
        );
      }
    }
    for (const [name, threads] of perThread) {
      const line = [...threads].sort(([a], [b]) => a.localeCompare(b))
        .map(([t, xs]) => `${t} ${median(xs).toFixed(1)}`).join("  ");
      console.log(`${name} per thread, µs CPU a request (median): ${line}`);
      console.log(`${name} RSS after each round (MB): ${rss.get(name)?.join(" ")}`);
    }
    console.log(`load average after: ${loadAverage()}`);
    return 0;
  } finally {
    for (const s of sides) {
      try {
        s.child.kill("SIGTERM");
      } catch { /* already stopped */ }
      await s.child.status;
    }
    upstream.kill("SIGTERM");
    await upstream.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
