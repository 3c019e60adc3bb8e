/**
 * Connection floods from many addresses (issue #37, item 3): does a benign client from a fresh
 * address still get answers while thousands of slow-header connections from 50 loopback
 * addresses are open? One `waf serve`, started as `deno task start` starts it (the task's own
 * command line, read from deno.json, with a site in front of a small upstream). In each phase a
 * child process opens the slow connections (bound to 127.0.0.2-51 with node:net's
 * `localAddress`; Linux routes all of 127/8 to loopback), sends a request line and one header,
 * then one more header line every few seconds, never the end of the head, and reconnects
 * whatever the WAF closes, as a slowloris does. Meanwhile probes from 127.0.0.60 each open a new
 * connection, send one GET and count an answer 200 within `--probe-timeout` as a success; probes
 * from 127.0.0.61 do the same for the management listener's `/health`. A last phase floods the
 * management listener itself (1,000 connections from 25 addresses) and probes its `/health`.
 *
 * ```sh
 * deno task bench:flood [--slow 4500,10000] [--addresses 50] [--duration 20]
 *                       [--probe-timeout 2000] [--probers 4] [--management-flood 1000]
 *                       [--root DIR] [--no-shapes]
 * ```
 *
 * A phase whose connections the descriptor limit (`ulimit -n`, raised with prlimit where the
 * hard limit lets it) cannot hold is skipped and says so. `--root` runs another checkout's
 * `main.ts` (the code before a change) with the same harness. The CPU cost per byte of the
 * engine's adversarial body shapes is `deno task bench:shapes` (the engine's benchmark): run
 * after the flood phases when the task exists, unless `--no-shapes`.
 */
import net from "node:net";
import { parseArgs } from "node:util";
import { freePort, loadAverage, run, waitForPort } from "./bench_kit.ts";
import { ensureAdmin, siteWhenUp, startOkUpstream } from "./bench_login_flood.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const HOST = "shop.bench";

interface SlowOptions {
  readonly port: number;
  readonly count: number;
  readonly addresses: number;
  /** The last octet of the first source address (127.0.0.N). */
  readonly first: number;
  readonly host: string;
  readonly trickleMs: number;
}

/**
 * The flood itself (run as a child: its event loop must not delay the probes): keeps `count`
 * slow-header connections open, reporting `{open, reconnects}` as a JSON line every second.
 */
function slowFlood(o: SlowOptions): void {
  let open = 0;
  let reconnects = 0;
  const connect = (address: string) => {
    const s = net.connect({ host: "127.0.0.1", port: o.port, localAddress: address });
    let timer: ReturnType<typeof setInterval> | undefined;
    let counted = false;
    s.on("connect", () => {
      counted = true;
      open++;
      s.write(`GET / HTTP/1.1\r\nHost: ${o.host}\r\n`);
      timer = setInterval(() => s.write("X-Slow: 1\r\n"), o.trickleMs);
    });
    s.on("data", () => {});
    s.on("error", () => {});
    s.on("close", () => {
      if (counted) open--;
      clearInterval(timer);
      reconnects++;
      setTimeout(() => connect(address), 200);
    });
  };
  // In batches, so that the listener's accept queue is not what refuses them.
  let started = 0;
  const batch = () => {
    for (let i = 0; i < 250 && started < o.count; i++, started++) {
      connect(`127.0.0.${o.first + (started % o.addresses)}`);
    }
    if (started < o.count) setTimeout(batch, 50);
  };
  batch();
  setInterval(() => console.log(JSON.stringify({ open, reconnects })), 1000);
}

/** A running flood child and the last thing it reported. */
class Flood {
  readonly child: Deno.ChildProcess;
  last = { open: 0, reconnects: 0 };

  constructor(o: SlowOptions) {
    this.child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL(import.meta.url).pathname, "--role", "slow", JSON.stringify(o)],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    void this.#read();
  }

  async #read(): Promise<void> {
    const lines = this.child.stdout.pipeThrough(new TextDecoderStream());
    let rest = "";
    for await (const text of lines) {
      rest += text;
      let nl: number;
      while ((nl = rest.indexOf("\n")) >= 0) {
        this.last = JSON.parse(rest.slice(0, nl));
        rest = rest.slice(nl + 1);
      }
    }
  }

  /** Waits until `want` connections are open (or `ms` passed); what is open then. */
  async ramp(want: number, ms = 90_000): Promise<number> {
    const until = Date.now() + ms;
    while (this.last.open < want && Date.now() < until) await sleep(500);
    return this.last.open;
  }

  async stop(): Promise<void> {
    try {
      this.child.kill("SIGKILL");
    } catch { /* gone */ }
    await this.child.status;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One GET on a new connection from `address`; its latency in ms, or undefined on failure. */
function probe(
  address: string,
  port: number,
  request: string,
  timeoutMs: number,
): Promise<number | undefined> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let got = "";
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve(ok ? performance.now() - t0 : undefined);
    };
    const s = net.connect({ host: "127.0.0.1", port, localAddress: address }, () => {
      s.write(request);
    });
    const timer = setTimeout(() => finish(false), timeoutMs);
    s.on("data", (d: Uint8Array) => {
      got += new TextDecoder().decode(d);
      if (got.includes("\r\n")) finish(got.startsWith("HTTP/1.1 200"));
    });
    s.on("error", () => finish(false));
    s.on("close", () => finish(false));
  });
}

interface ProbeResult {
  readonly total: number;
  readonly ok: number;
  readonly p50: number;
  readonly p99: number;
}

/** `probers` loops of probes for `seconds`. */
async function probes(
  address: string,
  port: number,
  request: string,
  o: { seconds: number; probers: number; timeoutMs: number },
): Promise<ProbeResult> {
  const until = Date.now() + o.seconds * 1000;
  const times: number[] = [];
  let total = 0;
  await Promise.all(Array.from({ length: o.probers }, async () => {
    while (Date.now() < until) {
      total++;
      const ms = await probe(address, port, request, o.timeoutMs);
      if (ms !== undefined) times.push(ms);
      // Paced: a probe's port waits in TIME_WAIT, and one address has some 28,000 of them.
      await sleep(20);
    }
  }));
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(times.length * q))] ?? NaN;
  return { total, ok: times.length, p50: at(0.5), p99: at(0.99) };
}

const show = (r: ProbeResult) =>
  `${r.ok}/${r.total} (${(100 * r.ok / Math.max(1, r.total)).toFixed(1)} %), ` +
  `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`;

/** The WAF's connection counters (Prometheus text) for `listener`, by sample name and reason. */
async function counters(mgmt: string, listener: string): Promise<Record<string, number>> {
  const text = await fetch(`${mgmt}/metrics`).then((r) => r.text(), () => "");
  const out: Record<string, number> = {};
  const re = new RegExp(
    `^waf_connections_(\\w+)\\{listener="${listener}"(?:,reason="(\\w+)")?\\} (\\d+)`,
    "gm",
  );
  for (const m of text.matchAll(re)) out[m[2] ? `${m[1]}.${m[2]}` : m[1]!] = Number(m[3]);
  return out;
}

/** The descriptor limit this process (and so its children) has, raised to the hard one. */
async function descriptorLimit(): Promise<number> {
  const read = () =>
    Number(/^Max open files\s+(\d+)/m.exec(Deno.readTextFileSync("/proc/self/limits"))?.[1] ?? 0);
  const hard = Number(
    /^Max open files\s+\d+\s+(\d+)/m.exec(Deno.readTextFileSync("/proc/self/limits"))?.[1] ?? 0,
  );
  if (read() < hard) await run("prlimit", [`--pid=${Deno.pid}`, `--nofile=${hard}:${hard}`]);
  return read();
}

interface Waf {
  readonly child: Deno.ChildProcess;
  readonly dataPort: number;
  readonly mgmtPort: number;
  readonly mgmt: string;
}

/** `waf serve` as `deno task start` runs it (that task's command line), with the bench site. */
async function startWaf(root: string, dir: string, upstream: string): Promise<Waf> {
  const dataPort = freePort();
  const mgmtPort = freePort();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    `server:\n  data:\n    listen: "127.0.0.1:${dataPort}"\n  management:\n` +
      `    listen: "127.0.0.1:${mgmtPort}"\nlogging:\n  level: warn\n` +
      `monitor:\n  prometheus:\n    public: true\n`,
  );
  await ensureAdmin(root, dir);
  const task = JSON.parse(await Deno.readTextFile(`${root}deno.json`)).tasks.start as string;
  const [, ...args] = task.trim().split(/\s+/);
  const child = new Deno.Command(Deno.execPath(), {
    args: [...args, "--data-dir", dir],
    cwd: root,
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const mgmt = await siteWhenUp(dataPort, mgmtPort, HOST, upstream);
  return { child, dataPort, mgmtPort, mgmt };
}

export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      role: { type: "string" },
      slow: { type: "string", default: "4500,10000" },
      addresses: { type: "string", default: "50" },
      duration: { type: "string", default: "20" },
      "probe-timeout": { type: "string", default: "2000" },
      probers: { type: "string", default: "4" },
      "management-flood": { type: "string", default: "1000" },
      trickle: { type: "string", default: "5000" },
      root: { type: "string", default: ROOT },
      "no-shapes": { type: "boolean", default: false },
    },
    allowPositionals: true,
  });
  const root = values.root.endsWith("/") ? values.root : `${values.root}/`;
  const addresses = Number(values.addresses);
  const o = {
    seconds: Number(values.duration),
    probers: Number(values.probers),
    timeoutMs: Number(values["probe-timeout"]),
  };
  const limit = await descriptorLimit();
  console.log(`uptime: ${(await run("uptime", [])).out.trim()}`);
  console.log(`descriptor limit (ulimit -n): ${limit}; root: ${root}`);
  const dir = await Deno.makeTempDir({ prefix: "waf-bench-flood-" });
  const upPort = freePort();
  const upstream = startOkUpstream(upPort);
  let waf: Waf | undefined;
  const floods: Flood[] = [];
  let verdict = 0;
  try {
    await waitForPort(upPort, "upstream");
    waf = await startWaf(root, dir, `http://127.0.0.1:${upPort}`);
    const data = `GET /products/42 HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`;
    const health = "GET /health HTTP/1.1\r\nHost: waf\r\nConnection: close\r\n\r\n";
    const benign = () => probes("127.0.0.60", waf!.dataPort, data, o);
    const healthy = (from = "127.0.0.61") => probes(from, waf!.mgmtPort, health, o);
    const quiet = await Promise.all([benign(), healthy()]);
    console.log(`\nno flood: data ${show(quiet[0])}; /health ${show(quiet[1])}`);
    const rows: string[] = [`| no flood | 0 | ${show(quiet[0])} | ${show(quiet[1])} |`];
    for (const count of values.slow.split(",").map(Number)) {
      // The WAF holds one descriptor per slow connection, this process one per probe and the
      // flood child one per connection: both need the count and a margin under the limit.
      if (count + 1_000 > limit) {
        console.log(`\n${count} slow connections: skipped (descriptor limit ${limit})`);
        rows.push(
          `| ${count} slow heads, ${addresses} addresses | skipped (ulimit -n ${limit}) | | |`,
        );
        continue;
      }
      const before = await counters(waf.mgmt, "data");
      const flood = new Flood({
        port: waf.dataPort,
        count,
        addresses,
        first: 2,
        host: HOST,
        trickleMs: Number(values.trickle),
      });
      floods.push(flood);
      const opened = await flood.ramp(Math.floor(count * 0.98));
      const results = await Promise.all([benign(), healthy()]);
      const after = await counters(waf.mgmt, "data");
      const delta = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
      console.log(
        `\n${count} slow connections from ${addresses} addresses (${opened} open at the start, ` +
          `${flood.last.open} at the end, ${flood.last.reconnects} reconnects; WAF open ` +
          `${after.open ?? "?"}, shed ${delta("closed_total.shed")}, header_timeout ` +
          `${delta("closed_total.header_timeout")}, refused ${
            delta("refused_total.total") + delta("refused_total.fd_limit") +
            delta("refused_total.per_client")
          }):\n  data ${show(results[0])}\n  /health ${show(results[1])}`,
      );
      rows.push(
        `| ${count} slow heads, ${addresses} addresses | ${flood.last.open} | ${
          show(results[0])
        } | ${show(results[1])} |`,
      );
      if (results[0].ok / Math.max(1, results[0].total) < 0.9) verdict = 1;
      await flood.stop();
      floods.pop();
      // Let the WAF see the flood's connections go before the next phase.
      await sleep(3_000);
    }
    const mgmtCount = Number(values["management-flood"]);
    if (mgmtCount > 0) {
      const flood = new Flood({
        port: waf.mgmtPort,
        count: mgmtCount,
        addresses: 25,
        first: 2,
        host: "waf",
        trickleMs: Number(values.trickle),
      });
      floods.push(flood);
      const opened = await flood.ramp(Math.floor(mgmtCount * 0.98), 30_000);
      const r = await healthy("127.0.0.62");
      const m = await counters(waf.mgmt, "management");
      console.log(
        `\n${mgmtCount} slow connections from 25 addresses on the management listener ` +
          `(${opened} open; shed ${m["closed_total.shed"] ?? 0}, refused total ` +
          `${m["refused_total.total"] ?? 0}, fd_limit ${m["refused_total.fd_limit"] ?? 0}):` +
          `\n  /health ${show(r)}`,
      );
      rows.push(
        `| ${mgmtCount} slow heads on management, 25 addresses | ${flood.last.open} | | ${
          show(r)
        } |`,
      );
      await flood.stop();
      floods.pop();
    }
    console.log(
      `\n| flood | slow connections open | benign GET from 127.0.0.60 | management /health |\n` +
        `| --- | --- | --- | --- |\n${rows.join("\n")}`,
    );
    console.log(`load average after: ${loadAverage()}`);
  } finally {
    for (const f of floods) await f.stop();
    if (waf !== undefined) {
      waf.child.kill("SIGTERM");
      await waf.child.status;
    }
    upstream.kill("SIGTERM");
    await upstream.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
  if (!values["no-shapes"]) {
    if (tasks["bench:shapes"] === undefined) {
      console.log(
        "\nbody shapes: no `bench:shapes` task in this checkout (the engine's benchmark)",
      );
    } else {
      console.log("\nbody shapes (deno task bench:shapes):");
      const shapes = await new Deno.Command(Deno.execPath(), {
        args: ["task", "bench:shapes"],
        cwd: ROOT,
        stdout: "inherit",
        stderr: "inherit",
      }).output();
      if (!shapes.success) verdict = 1;
    }
  }
  return verdict;
}

if (import.meta.main) {
  const role = Deno.args.indexOf("--role");
  if (role >= 0 && Deno.args[role + 1] === "slow") slowFlood(JSON.parse(Deno.args[role + 2]!));
  else Deno.exit(await main(Deno.args));
}
