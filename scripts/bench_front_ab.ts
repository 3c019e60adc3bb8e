/**
 * Two checkouts' WAFs side by side (`waf serve`, one data-plane worker, the bench sites of
 * `bench_proxy.ts`, the same nginx upstream), driven by wrk in alternated rounds on the benign
 * mix through the protected site; req/s and the CPU time each process spent per request. Made
 * for the data listener's own HTTP/1.1 server against the loopback front before it (issue 13),
 * usable for any change of the request path.
 *
 * ```sh
 * git archive <commit> | (mkdir -p /tmp/waf-a && tar -x -C /tmp/waf-a)
 * deno run -A scripts/bench_front_ab.ts --a /tmp/waf-a [--b .] [--rounds 5] [--duration 5]
 *                                       [--host on.bench|off.bench]
 * ```
 *
 * The own server against the piped front in the same code (docs/bench/2026-11-25-own-http1-server.md):
 *
 * ```sh
 * git archive HEAD | (mkdir -p /tmp/waf-c && tar -x -C /tmp/waf-c)
 * sed -i 's/  const own = frontOptions.http1 !== false && !tls;/  const own = false;/' \
 *   /tmp/waf-c/net/listen.ts
 * deno run -A scripts/bench_front_ab.ts --a /tmp/waf-c --rounds 9 --duration 4
 * ```
 */
import { parseArgs } from "node:util";
import { ensure, freePort, loadAverage, median, stopAll } from "./bench_kit.ts";
import { BENIGN, measured, startNginxUpstream, startWaf, wrk, wrkScript } from "./bench_proxy.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    a: { type: "string" },
    b: { type: "string", default: new URL("..", import.meta.url).pathname },
    rounds: { type: "string", default: "5" },
    duration: { type: "string", default: "5" },
    connections: { type: "string", default: "50" },
    threads: { type: "string", default: "2" },
    host: { type: "string", default: "on.bench" },
  },
});
if (values.a === undefined) {
  console.error("usage: bench_front_ab.ts --a <checkout> [--b <checkout>]");
  Deno.exit(2);
}
const root = (p: string) => p.endsWith("/") ? p : `${p}/`;
const opts = {
  duration: Number(values.duration),
  connections: Number(values.connections),
  threads: Number(values.threads),
};
const load = loadAverage;
await ensure("wrk", "wrk");
await ensure("nginx", "nginx-light");
const dir = await Deno.makeTempDir({ prefix: "waf-ab-" });
const children: Deno.ChildProcess[] = [];
try {
  const upPort = freePort();
  children.push(await startNginxUpstream(dir, upPort));
  const upstream = `http://127.0.0.1:${upPort}`;
  const sides: Array<{ name: string; port: number; pid: number }> = [];
  for (const [name, checkout] of [["A", values.a], ["B", values.b]] as const) {
    const port = freePort();
    const child = await startWaf(dir, upstream, port, freePort(), "1", [], root(checkout), {
      name: `waf-${name}`,
    });
    children.push(child);
    sides.push({ name, port, pid: child.pid });
  }
  const script = wrkScript(BENIGN, values.host);
  for (const s of sides) {
    await wrk(dir, `http://127.0.0.1:${s.port}`, script, { ...opts, duration: 3 });
  }
  console.log(`A ${values.a}, B ${values.b}; load before: ${load()}`);
  const rps: Record<string, number[]> = { A: [], B: [] };
  const cpu: Record<string, number[]> = { A: [], B: [] };
  for (let round = 0; round < Number(values.rounds); round++) {
    const line: string[] = [];
    for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
      const r = await measured(s.pid, dir, `http://127.0.0.1:${s.port}`, script, opts);
      rps[s.name]!.push(r.rps);
      cpu[s.name]!.push(r.cpuUs!);
      line.push(`${s.name} ${r.rps.toFixed(0)} req/s ${r.cpuUs!.toFixed(1)} µs p99 ${r.p99} ms`);
    }
    console.log(`round ${round + 1} (load ${load()}): ${line.join(" | ")}`);
  }
  const [ra, rb, ca, cb] = [median(rps.A!), median(rps.B!), median(cpu.A!), median(cpu.B!)];
  console.log(
    `medians: A ${ra.toFixed(0)} req/s ${ca.toFixed(1)} µs/request, B ${rb.toFixed(0)} req/s ${
      cb.toFixed(1)
    } µs/request; B/A: ${(rb / ra * 100).toFixed(1)}% req/s, ${(cb / ca * 100).toFixed(1)}% CPU` +
      ` per request (load after: ${load()})`,
  );
} finally {
  await stopAll(children, dir);
}
