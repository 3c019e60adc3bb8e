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
 * ```
 *
 * `--hosts on.bench,off.bench` instead of `--host` measures every checkout on each host, each
 * pair in its own server (its own fresh store), and prints what protection costs a request in
 * each checkout: the CPU on the block-mode site minus the CPU on the site with protection off.
 */
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
import { alternate, ensure, freePort, loadAverage, median } from "./bench_kit.ts";

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
    },
  });
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
          { name: `waf-${name}` },
        );
        console.log(`${name}: ${root}`);
        const script = wrkScript(mix, host);
        sides.push({ name, pid: child.pid, url: `http://127.0.0.1:${port}`, child, script });
      }
    }
    for (const s of sides) await wrk(dir, s.url, s.script, opts);
    console.log(`load average before: ${loadAverage()}`);
    const rps = new Map<string, number[]>(sides.map((s) => [s.name, []]));
    const cpu = await alternate(sides, Number(values.rounds), "µs CPU a request", async (s) => {
      const r = await measured(s.pid, dir, s.url, s.script, {
        ...opts,
        duration: Number(values.duration),
      });
      if (r.non2xx > 0 && values.mix !== "attack") {
        throw new Error(`${s.name}: ${r.non2xx} answers were not 2xx`);
      }
      rps.get(s.name)!.push(r.rps);
      return r.cpuUs ?? Number.NaN;
    });
    console.log(
      `req/s (median): ${[...rps].map(([n, xs]) => `${n} ${median(xs).toFixed(0)}`).join("  ")}`,
    );
    if (hosts.length === 2) {
      // What the first host's site costs over the second's, per checkout (medians).
      for (let i = 0; i < roots.length; i++) {
        const side = String.fromCharCode(65 + i);
        const diff = cpu.get(`${side}@${hosts[0]}`)! - cpu.get(`${side}@${hosts[1]}`)!;
        console.log(`${side}: ${hosts[0]} minus ${hosts[1]}: ${diff.toFixed(2)} µs CPU a request`);
      }
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
