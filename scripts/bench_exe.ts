/**
 * `deno task bench:exe`: the single executable's size and start time against `deno task start`
 * in the same run (issue #38): builds `waf` with `deno task compile`'s defaults, then times from
 * exec to `GET /health/ready` answering 200 for a first start (an empty HOME: the file unpacks
 * itself) and for later starts, alternating with `deno task start`; and the same for
 * `waf --version` (exec to exit). Results: docs/bench/ (the dated executable entry).
 *
 * ```sh
 * deno task bench:exe [--first 2] [--later 3] [--compression gzip] [--level 6]
 * ```
 */
import { parseArgs } from "node:util";
import { loadAverage, median } from "./bench_kit.ts";
import { ROOT } from "./program_files.ts";

const CONFIG =
  'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n';
const READY = /management=(http:\/\/[\d.:]+)/;

interface Start {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  /** Only `env`: nothing of this shell's environment (XDG_CACHE_HOME, DENO_DIR) leaks in. */
  readonly clearEnv?: boolean;
}

/** Milliseconds from spawn to /health/ready answering 200; the server is then stopped. */
async function timeToReady(start: Start): Promise<number> {
  const t0 = performance.now();
  const child = new Deno.Command(start.cmd, {
    args: [...start.args],
    cwd: start.cwd,
    env: start.env,
    clearEnv: start.clearEnv,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const pumps = [child.stdout, child.stderr].map(async (s) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) output += chunk;
  });
  try {
    let m: RegExpExecArray | null;
    while (!(m = READY.exec(output))) {
      if (performance.now() - t0 > 120_000) throw new Error(`no start in 120 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    for (;;) {
      const r = await fetch(`${m[1]}/health/ready`).catch(() => undefined);
      await r?.body?.cancel();
      if (r?.status === 200) return performance.now() - t0;
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await Promise.all(pumps);
  }
}

async function timeToExit(start: Start): Promise<number> {
  const t0 = performance.now();
  const out = await new Deno.Command(start.cmd, {
    args: [...start.args],
    cwd: start.cwd,
    env: start.env,
    clearEnv: start.clearEnv,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
  return performance.now() - t0;
}

const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      first: { type: "string", default: "2" },
      later: { type: "string", default: "3" },
      compression: { type: "string", default: "gzip" },
      level: { type: "string", default: "6" },
    },
  });
  const dir = await Deno.makeTempDir({ prefix: "waf-bench-exe-" });
  try {
    console.log(`load average before: ${loadAverage()}`);
    const t0 = performance.now();
    const built = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}scripts/compile.ts`,
        `${dir}/waf`,
        "--compression",
        values.compression,
        "--level",
        values.level,
      ],
      stdout: "piped",
    }).output();
    const buildMs = performance.now() - t0;
    const said = new TextDecoder().decode(built.stdout).trim();
    if (built.code !== 0) throw new Error(said);
    const bytes = (await Deno.stat(`${dir}/waf`)).size;
    console.log(`${said.split("\n").at(-1)}\nbuild ${fmt(buildMs)}, file ${bytes} bytes`);

    const data = `${dir}/data`;
    await Deno.mkdir(data);
    await Deno.writeTextFile(`${data}/waf.yaml`, CONFIG);
    const base = { PATH: "/usr/bin:/bin" };
    const exe = (home: string, rest: string[]): Start => ({
      cmd: `${dir}/waf`,
      args: rest,
      cwd: dir,
      env: { ...base, HOME: home },
      clearEnv: true,
    });
    const source: Start = {
      cmd: Deno.execPath(),
      args: ["task", "-q", "start", "--data-dir", data],
      cwd: ROOT,
      env: {},
    };
    const serveArgs = ["serve", "--data-dir", data];
    // A started store first, so every measured start opens the same existing data directory.
    await timeToReady(source);

    const firsts: number[] = [];
    const firstVersions: number[] = [];
    for (let i = 0; i < Number(values.first); i++) {
      const home = `${dir}/home-first-${i}`;
      await Deno.mkdir(home);
      firsts.push(await timeToReady(exe(home, serveArgs)));
      const vhome = `${dir}/home-version-${i}`;
      await Deno.mkdir(vhome);
      firstVersions.push(await timeToExit(exe(vhome, ["--version"])));
      console.log(
        `first start ${i + 1}: ready ${fmt(firsts.at(-1)!)}, --version ${
          fmt(firstVersions.at(-1)!)
        }`,
      );
    }
    const home = `${dir}/home-first-0`;
    const later: number[] = [];
    const task: number[] = [];
    const laterVersion: number[] = [];
    const sourceVersion: number[] = [];
    const sourceRun: Start = {
      cmd: Deno.execPath(),
      args: ["run", "-A", `${ROOT}main.ts`, "--version"],
      cwd: ROOT,
      env: {},
    };
    for (let i = 0; i < Number(values.later); i++) {
      const pair = [
        async () => later.push(await timeToReady(exe(home, serveArgs))),
        async () => task.push(await timeToReady(source)),
      ];
      for (const f of i % 2 === 0 ? pair : pair.reverse()) await f();
      laterVersion.push(await timeToExit(exe(home, ["--version"])));
      sourceVersion.push(await timeToExit(sourceRun));
      console.log(
        `round ${i + 1}: waf ready ${fmt(later.at(-1)!)}, deno task start ready ${
          fmt(task.at(-1)!)
        }` +
          `; --version waf ${fmt(laterVersion.at(-1)!)}, deno run ${fmt(sourceVersion.at(-1)!)}`,
      );
    }
    console.log(`\n| | exec to /health/ready | --version (exec to exit) |`);
    console.log(`|---|---|---|`);
    console.log(
      `| waf, first start (unpacks) | ${fmt(median(firsts))} | ${fmt(median(firstVersions))} |`,
    );
    console.log(`| waf, later start | ${fmt(median(later))} | ${fmt(median(laterVersion))} |`);
    console.log(
      `| deno task start / deno run main.ts | ${fmt(median(task))} | ${
        fmt(median(sourceVersion))
      } |`,
    );
    console.log(
      `\nmedians of ${values.first} first and ${values.later} later starts; file ${bytes} bytes`,
    );
    console.log(`load average after: ${loadAverage()}`);
    return 0;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
