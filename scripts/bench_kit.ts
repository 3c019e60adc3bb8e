/** Process, package and port helpers shared by the benchmark scripts. */

import { cpuUsage } from "node:process";

/** Runs a command; stdout is captured, stderr captured unless `quiet` is false. */
export async function run(
  cmd: string,
  args: string[],
  quiet = true,
): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: quiet ? "piped" : "inherit",
  }).output();
  return { code: out.code, out: new TextDecoder().decode(out.stdout) };
}

async function which(bin: string): Promise<boolean> {
  return (await run("sh", ["-c", `command -v ${bin}`])).code === 0;
}

/** Installs a Debian package when its binary is missing. */
export async function ensure(bin: string, pkg: string): Promise<void> {
  if (await which(bin)) return;
  console.log(`installing ${pkg} (apt-get) ...`);
  await run("apt-get", ["update", "-qq"]);
  const r = await run("apt-get", ["install", "-y", "-qq", pkg]);
  if (r.code !== 0 || !(await which(bin))) {
    throw new Error(`Cannot install "${pkg}": run "apt-get install ${pkg}" as root`);
  }
}

/** A loopback port that was free a moment ago. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Waits (up to 20 s) until something accepts connections on `port`. */
export async function waitForPort(port: number, what: string): Promise<void> {
  // 60 s: a server that compiles 200,000 indicators starts slowly on a loaded machine.
  for (let i = 0; i < 1200; i++) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`${what} did not start listening on port ${port}`);
}

/** The median of `xs` (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length / 2;
  return s.length % 2 ? s[Math.floor(m)]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * An A/B in one run: `rounds` rounds of `measure` on every side, the order alternating so that
 * neither side always runs after the other; prints each result in `unit` and then the medians.
 */
export async function alternate<S extends { readonly name: string }>(
  sides: readonly S[],
  rounds: number,
  unit: string,
  measure: (side: S) => Promise<number>,
): Promise<Map<string, number>> {
  const results = new Map<string, number[]>(sides.map((s) => [s.name, []]));
  for (let i = 0; i < rounds; i++) {
    for (const s of i % 2 === 0 ? sides : [...sides].reverse()) {
      const v = await measure(s);
      results.get(s.name)!.push(v);
      console.log(`round ${i + 1} ${s.name}: ${v.toFixed(2)} ${unit}`);
    }
  }
  const medians = new Map([...results].map(([name, xs]) => [name, median(xs)]));
  const line = [...medians].map(([name, m]) => `${name} ${m.toFixed(2)} ${unit}`).join("  ");
  const [a, b] = [...medians.values()];
  console.log(`median: ${line}${b === undefined ? "" : `  (B/A ${((b / a!) * 100).toFixed(1)}%)`}`);
  return medians;
}

/** Ends a benchmark's child processes (waiting for each) and removes its scratch folder. */
export async function stopAll(children: readonly Deno.ChildProcess[], dir: string): Promise<void> {
  for (const c of children) {
    try {
      c.kill("SIGTERM");
    } catch { /* already gone */ }
    await c.status;
  }
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}

/**
 * Milliseconds of CPU this process spent so far (user and system, every thread): on a shared
 * machine, time other processes run does not count, as it would with wall-clock time.
 */
export function cpuMs(): number {
  const u = cpuUsage();
  return (u.user + u.system) / 1000;
}

/** The load average (1, 5 and 15 minutes), to print next to every measurement. */
export function loadAverage(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

/** CPU clock ticks (1/100 s) used so far by `pid`, its threads and its child processes. */
export function cpuTicks(pid: number): number {
  const ticks = (p: number) => {
    try {
      const fields = Deno.readTextFileSync(`/proc/${p}/stat`).split(") ")[1]!.split(" ");
      return Number(fields[11]) + Number(fields[12]);
    } catch {
      return 0;
    }
  };
  let total = ticks(pid);
  try {
    const kids = Deno.readTextFileSync(`/proc/${pid}/task/${pid}/children`).trim();
    for (const k of kids.split(/\s+/).filter(Boolean)) total += ticks(Number(k));
  } catch {
    // no children listing: the process alone
  }
  return total;
}

/**
 * The first thread of `pid` (a Deno server's event loop) as the scheduler counts it
 * (`/proc/<pid>/task/<pid>/schedstat`): nanoseconds on a core and nanoseconds runnable but waiting
 * for one, so far. Over a run, the difference tells an event loop that was busy from one that
 * waited for its core (other threads or processes holding it); zeros when unreadable.
 */
export function eventLoopSched(pid: number): { runNs: number; waitNs: number } {
  try {
    const [run, wait] = Deno.readTextFileSync(`/proc/${pid}/task/${pid}/schedstat`).split(" ");
    return { runNs: Number(run), waitNs: Number(wait) };
  } catch {
    return { runNs: 0, waitNs: 0 };
  }
}

/**
 * CPU clock ticks (1/100 s) used so far by each thread of `pid`, by thread name: `main` for the
 * process's first thread (the event loop), else the name the runtime gave it (`worker-1`, the
 * access-log writer when it is the first worker started; `tokio-runtime-w`, `V8 DefaultWorke`,
 * ...), threads of one name added up.
 */
export function threadTicks(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tasks: Deno.DirEntry[] = [];
  try {
    tasks = [...Deno.readDirSync(`/proc/${pid}/task`)];
  } catch {
    return out;
  }
  for (const t of tasks) {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/stat`);
      const close = stat.lastIndexOf(")");
      const name = t.name === String(pid) ? "main" : stat.slice(stat.indexOf("(") + 1, close);
      const fields = stat.slice(close + 2).split(" ");
      out.set(name, (out.get(name) ?? 0) + Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/**
 * A benign GET's access record as the data plane makes it at default protection (what the
 * access-log benchmarks store).
 */
export function benignRecord(traceId: string, time: number): Record<string, unknown> {
  return {
    trace_id: traceId,
    time,
    site_id: "c0ffee00-0000-4000-8000-000000000001",
    site: "on",
    client_ip: "127.0.0.1",
    peer_ip: "127.0.0.1",
    proto: "http",
    method: "GET",
    host: "on.bench",
    path: "/products",
    query: "id=42&sort=price&page=2",
    user_agent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36",
    status: 200,
    action: "pass",
    chain: [
      { check: "site", result: "match", us: 3 },
      { check: "rate_limit", result: "pass", us: 1 },
      { check: "engine", result: "pass", us: 21 },
      { check: "upstream", result: "200", us: 180 },
    ],
    finding: null,
    findings: 0,
    upstream: "http://127.0.0.1:8081",
    bytes_in: 0,
    bytes_out: 24,
    latency_us: { total: 230, waf: 50, upstream: 180 },
  };
}
