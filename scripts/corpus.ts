/**
 * Measures the engine against the shared attack corpora.
 *
 * ```sh
 * deno task corpus --mode engine --dir ../shared/corpus/blazehttp-dev [--level balanced]
 * deno task corpus --mode engine --dir ../shared/corpus/gotestwaf-dev   # + per placement/encoding
 * deno task corpus --mode http --target http://127.0.0.1:8080 --host example.test
 * deno task corpus --mode payloads --file ../shared/corpus/payloads/attacks.jsonl [--limit N]
 *                  [--class sqli [--placement path]]   # with --class: that placement's misses
 *                  [--name next] [--header referer]    # parameter/cookie name, header
 * ```
 *
 * Files named `<set>__<case>__<placement>__<encoding>__<hash>.<black|white>` (gotestwaf-dev)
 * are also reported per placement, per encoding and per case; files in sub-folders
 * (`crs-dev/PL1/<rule file>/`) per folder. Corpus files stay outside the
 * repository; a missing corpus exits with status 2.
 */

import { parseArgs } from "node:util";
import { inspect } from "../engine/inspect.ts";
import type { Finding, Level } from "../engine/types.ts";
import { parseRawRequest, serializeForReplay, toEngineRequest } from "./raw_http.ts";
import { runPayloads } from "./corpus_payloads.ts";

const LEVELS: readonly Level[] = ["low", "balanced", "strict"];
const PROBE = "GET /keys?1%20AND%201=1%20UNION%20ALL%20SELECT%201,NULL," +
  "'%3Cscript%3Ealert(%22XSS%22)%3C/script%3E',table_name%20FROM%20information_schema.tables" +
  " HTTP/1.1";

interface Outcome {
  readonly file: string;
  readonly black: boolean;
  readonly blocked: boolean;
  readonly finding?: Finding;
}

/** Entry point; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      mode: { type: "string", default: "engine" },
      dir: { type: "string", default: "../shared/corpus/blazehttp-dev" },
      file: { type: "string", default: "../shared/corpus/payloads/attacks.jsonl" },
      level: { type: "string", default: "balanced" },
      target: { type: "string", default: "http://127.0.0.1:8080" },
      host: { type: "string", default: "example.test" },
      limit: { type: "string" },
      class: { type: "string" },
      placement: { type: "string", default: "query" },
      name: { type: "string" },
      header: { type: "string", default: "user-agent" },
      concurrency: { type: "string", default: "8" },
      quiet: { type: "boolean", default: false },
    },
  });
  const level = values.level as Level;
  if (!LEVELS.includes(level)) {
    console.error(`Unknown level: "${values.level}"`);
    return 2;
  }
  if (values.mode === "payloads") {
    if (!(await exists(values.file))) return missing(values.file);
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    return await runPayloads({
      file: values.file,
      level,
      limit,
      only: values.class,
      missesIn: values.placement,
      names: { param: values.name, header: values.header.toLowerCase() },
    });
  }
  if (values.mode !== "engine" && values.mode !== "http") {
    console.error(`Unknown mode: "${values.mode}"`);
    return 2;
  }
  if (!(await exists(values.dir))) return missing(values.dir);
  const files = await corpusFiles(values.dir);
  const outcomes: Outcome[] = [];
  if (values.mode === "engine") {
    const times: number[] = [];
    const requests = await Promise.all(files.map(async (name) => {
      return toEngineRequest(parseRawRequest(await Deno.readFile(`${values.dir}/${name}`)));
    }));
    // One untimed pass first: a data plane runs warm, so cold JIT time would mislead.
    for (const req of requests) inspect(req, { level });
    for (let k = 0; k < files.length; k++) {
      const name = files[k]!;
      const req = requests[k]!;
      const t0 = performance.now();
      const result = inspect(req, { level });
      times.push(performance.now() - t0);
      outcomes.push({
        file: name,
        black: name.endsWith(".black"),
        blocked: result.blocking !== undefined,
        finding: result.blocking,
      });
    }
    report(outcomes, values.quiet);
    times.sort((a, b) => a - b);
    const pct = (p: number) => (times[Math.floor((times.length - 1) * p)]! * 1000).toFixed(1);
    console.log(
      `latency of inspect(): p50 ${pct(0.5)} us, p90 ${pct(0.9)} us, p99 ${pct(0.99)} us`,
    );
  } else {
    const target = new URL(values.target);
    const probe = await send(
      target,
      new TextEncoder().encode(
        `${PROBE}\r\nHost: ${values.host}\r\nConnection: close\r\n\r\n`,
      ),
    );
    if (probe === undefined) {
      console.error(`Target not reachable: "${values.target}"`);
      return 1;
    }
    console.log(`probe status ${probe} (a request with this status counts as blocked)`);
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const name = files[next++]!;
        const raw = parseRawRequest(await Deno.readFile(`${values.dir}/${name}`));
        const status = await send(target, serializeForReplay(raw, values.host));
        outcomes.push({ file: name, black: name.endsWith(".black"), blocked: status === probe });
      }
    };
    await Promise.all(Array.from({ length: Number(values.concurrency) }, worker));
    outcomes.sort((a, b) => a.file.localeCompare(b.file));
    report(outcomes, values.quiet);
  }
  return 0;
}

/**
 * The `.black` and `.white` files under `dir`, as paths relative to it: sub-folders are walked,
 * so `crs-dev/PL1` (one folder per CRS rule file) replays whole.
 */
export async function corpusFiles(dir: string, prefix = ""): Promise<string[]> {
  const files: string[] = [];
  for await (const e of Deno.readDir(`${dir}/${prefix}`)) {
    const rel = prefix === "" ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory) files.push(...await corpusFiles(dir, rel));
    else if (e.isFile && (e.name.endsWith(".black") || e.name.endsWith(".white"))) files.push(rel);
  }
  return files.sort();
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

function missing(path: string): number {
  console.error(
    `Corpus not found: "${path}" (expected beside the repository, see ../shared/corpus; ` +
      "it is never copied into the repository)",
  );
  return 2;
}

const STATUS_LINE = /^HTTP\/\d(?:\.\d)?\s+(\d{3})/;

/** Sends one request over its own connection; returns the status or undefined on failure. */
async function send(target: URL, bytes: Uint8Array): Promise<number | undefined> {
  let conn: Deno.TcpConn | undefined;
  try {
    conn = await Deno.connect({ hostname: target.hostname, port: Number(target.port || 80) });
    await conn.write(bytes);
    const buf = new Uint8Array(64);
    let got = 0;
    while (got < 16) {
      const n = await conn.read(buf.subarray(got));
      if (n === null) break;
      got += n;
    }
    const m = STATUS_LINE.exec(new TextDecoder().decode(buf.subarray(0, got)));
    return m === null ? undefined : Number(m[1]);
  } catch {
    return undefined;
  } finally {
    try {
      conn?.close();
    } catch {
      // Already closed by the peer.
    }
  }
}

function report(outcomes: readonly Outcome[], quiet: boolean | undefined): void {
  const black = outcomes.filter((o) => o.black);
  const white = outcomes.filter((o) => !o.black);
  const tp = black.filter((o) => o.blocked).length;
  const fp = white.filter((o) => o.blocked).length;
  const pc = (a: number, b: number) => (b === 0 ? "n/a" : `${((100 * a) / b).toFixed(2)}%`);
  if (!quiet) {
    for (const o of black) if (!o.blocked) console.log(`miss ${o.file}`);
    for (const o of white) {
      if (!o.blocked) continue;
      const f = o.finding;
      const why = f === undefined
        ? ""
        : ` ${f.ruleId} ${f.score} ${f.location} ${JSON.stringify(f.evidence)}`;
      console.log(`false positive ${o.file}${why}`);
    }
  }
  console.log(`black ${black.length}, white ${white.length}`);
  console.log(`detection rate ${pc(tp, black.length)} (${tp}/${black.length})`);
  console.log(`false-positive rate ${pc(fp, white.length)} (${fp}/${white.length})`);
  console.log(`accuracy ${pc(tp + white.length - fp, outcomes.length)}`);
  for (const [field, title] of BREAKDOWNS) breakdown(outcomes, field, title);
  if (outcomes.some((o) => o.file.includes("/"))) {
    breakdownBy(outcomes, (file) => file.split("/").slice(0, -1).join("/"), "folder");
  }
}

/** Parts of a gotestwaf-style file name: set, case, placement, encoding, hash. */
const BREAKDOWNS: ReadonlyArray<readonly [number, string]> = [
  [2, "placement"],
  [3, "encoding"],
  [1, "case"],
];

/** Detection and false positives grouped by one part of the file name, when names have parts. */
function breakdown(outcomes: readonly Outcome[], field: number, title: string): void {
  const name = (file: string) => file.slice(file.lastIndexOf("/") + 1);
  if (outcomes.some((o) => name(o.file).split("__").length < 5)) return;
  breakdownBy(outcomes, (file) => name(file).split("__")[field]!, title);
}

/** Detection and false positives grouped by a key taken from each file's path. */
function breakdownBy(
  outcomes: readonly Outcome[],
  keyOf: (file: string) => string,
  title: string,
): void {
  const groups = new Map<string, { black: number; tp: number; white: number; fp: number }>();
  for (const o of outcomes) {
    const key = keyOf(o.file);
    const g = groups.get(key) ?? { black: 0, tp: 0, white: 0, fp: 0 };
    if (o.black) {
      g.black++;
      if (o.blocked) g.tp++;
    } else {
      g.white++;
      if (o.blocked) g.fp++;
    }
    groups.set(key, g);
  }
  const rate = (a: number, b: number) => (b === 0 ? "-" : `${((100 * a) / b).toFixed(1)}%`);
  console.log(`\n| ${title} | attacks | detected | rate | benign | false positives |`);
  console.log("|---|---:|---:|---:|---:|---:|");
  for (const [key, g] of [...groups].sort((a, b) => a[0].localeCompare(b[0]))) {
    console.log(
      `| ${key} | ${g.black} | ${g.tp} | ${rate(g.tp, g.black)} | ${g.white} | ${g.fp} |`,
    );
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
