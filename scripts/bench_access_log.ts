/**
 * The access log's cost per record, both threads together: records pushed as the data plane
 * pushes them (early flushes of 64, the writer thread inserting into a store on disk), with the
 * process's CPU time (user + system, every thread) divided by the records written. With `--a`
 * the same run also loads the access log of another checkout and alternates the two (an A/B in
 * one process, on one machine load).
 *
 * ```sh
 * deno run -A scripts/bench_access_log.ts [--a /tmp/waf-a] [--records 20000] [--rounds 4]
 * ```
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { alternate, benignRecord, loadAverage, median, threadTicks } from "./bench_kit.ts";

type Record_ = Record<string, unknown>;

interface Variant {
  readonly name: string;
  push(r: Record_): void;
  flush(): Promise<number>;
  stop(): Promise<void>;
}

async function load(name: string, root: string, dir: string): Promise<Variant> {
  const url = (p: string) => new URL(p, `file://${root}`).href;
  // A checkout from before the access log had a folder of its own has its modules elsewhere.
  const folder = await Deno.stat(`${root}mod/access_log`).then(() => true, () => false);
  const { openStore } = await import(url("db/store.ts"));
  const { createAccessLogRepo } = await import(url("db/access_log_repo.ts"));
  const { createWorkerWriter } = await import(
    url(folder ? "mod/access_log/worker_writer.ts" : "db/access_log_writer.ts")
  );
  const { createAccessLog } = await import(
    url(folder ? "mod/access_log/access_log.ts" : "mod/data_plane/access_log.ts")
  );
  const lineFormat = folder ? (await import(url("mod/access_log/lines.ts"))).lineFormat : undefined;
  const { systemClock } = await import(url("mod/core/clock.ts"));
  const { createLogger } = await import(url("mod/core/logger.ts"));
  const path = `${dir}/${name}.db`;
  const db = openStore(path, { now: Date.now() });
  const log = createAccessLog(
    { queueSize: 100_000, batchSize: 500, retentionDays: 30, maxRecords: 10_000_000 },
    {
      repo: createAccessLogRepo(db, lineFormat),
      writer: createWorkerWriter(path),
      clock: systemClock,
      logger: createLogger({ format: "text", level: "error" }),
    },
  );
  log.start();
  return {
    name,
    push: (r) => log.push(r),
    flush: () => log.flush(),
    stop: async () => {
      await log.stop();
      db.close();
    },
  };
}

let seq = 0;
/** A benign request's record, as the data plane makes it at default protection. */
function benign(): Record_ {
  seq++;
  const now = Date.now();
  return benignRecord(now.toString(16).padStart(12, "0") + seq.toString(16).padStart(20, "0"), now);
}

/** Per variant: the main thread's and the other threads' µs CPU a record in each round. */
const split = new Map<string, { main: number[]; rest: number[] }>();

function sum(ticks: Map<string, number>, main: boolean): number {
  let n = 0;
  for (const [name, t] of ticks) if ((name === "main") === main) n += t;
  return n;
}

async function round(v: Variant, records: number): Promise<number> {
  const before = process.cpuUsage();
  const threads = threadTicks(Deno.pid);
  for (let i = 0; i < records; i += 64) {
    for (let j = 0; j < 64; j++) v.push(benign());
    // The data plane yields between bursts (the early flush runs at the end of the turn).
    await new Promise((r) => setTimeout(r, 0));
  }
  await v.flush();
  const used = process.cpuUsage(before);
  const after = threadTicks(Deno.pid);
  const s = split.get(v.name) ?? { main: [], rest: [] };
  s.main.push(((sum(after, true) - sum(threads, true)) * 10_000) / records);
  s.rest.push(((sum(after, false) - sum(threads, false)) * 10_000) / records);
  split.set(v.name, s);
  return (used.user + used.system) / records;
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      a: { type: "string" },
      records: { type: "string", default: "20000" },
      rounds: { type: "string", default: "4" },
    },
  });
  const dir = await Deno.makeTempDir({ prefix: "waf-log-bench-" });
  const here = new URL("..", import.meta.url).pathname;
  const variants = [await load("B", here, dir)];
  if (values.a) variants.unshift(await load("A", resolve(values.a) + "/", dir));
  const records = Number(values.records);
  try {
    for (const v of variants) await round(v, 2000); // warm-up
    console.log(`load average before: ${loadAverage()}`);
    split.clear();
    await alternate(variants, Number(values.rounds), "µs CPU a record", (v) => round(v, records));
    for (const [name, s] of split) {
      console.log(
        `${name}: main thread ${median(s.main).toFixed(2)}, other threads (the writer) ${
          median(s.rest).toFixed(2)
        } µs CPU a record (median, 10 ms ticks)`,
      );
    }
    console.log(`load average after: ${loadAverage()}`);
  } finally {
    for (const v of variants) await v.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
