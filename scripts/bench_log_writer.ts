/**
 * The access-log writer thread's rate (records stored a second), as the server runs it: its own
 * store connection to a file on disk, nice 19 with escalation to normal priority, rows as the
 * write queue sends them (64-row deferred batches, or the data-plane workers' 256-row batches),
 * at most `--held` rows unanswered (the queue's size), a table already at `--keep` rows so each
 * write also deletes the oldest (`max_records` in step). Measured with 0, 1 and 2 CPU hogs
 * (`sh -c 'while :; do :; done'`, one a core here) beside it: the writer must outpace the data
 * plane's full rate with both cores busy.
 *
 * ```sh
 * deno task bench:log-writer [--seconds 10] [--hogs 0,2] [--batch 64] [--keep 100000]
 * ```
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { benignRecord, loadAverage } from "./bench_kit.ts";
import { openStore } from "../db/store.ts";
import { createAccessLogRepo } from "../db/access_log_repo.ts";
import { lineFormat } from "../mod/access_log/lines.ts";
import { type AccessRecord, recordLines } from "../mod/access_log/record.ts";
import { createWorkerWriter } from "../mod/access_log/worker_writer.ts";

const ID = "0".repeat(32);

/** Makes batches of `n` distinct rows cheaply: one row's text with its trace id swapped. */
function batchMaker(n: number): () => string {
  const line = recordLines(benignRecord(ID, Date.now()) as unknown as AccessRecord);
  const at = line.indexOf(ID);
  const head = line.slice(0, at);
  const tail = line.slice(at + ID.length);
  let seq = 0;
  return () => {
    let text = "";
    for (let i = 0; i < n; i++) text += head + (++seq).toString(16).padStart(32, "0") + tail;
    return text;
  };
}

interface Phase {
  readonly hogs: number;
  readonly rate: number;
  /** CPU time of the whole process (both threads) a record stored (µs). */
  readonly cpuUs: number;
  readonly rows: number;
  readonly escalations: number;
  /** Writes a replaced (starved) thread handed to the next one unwritten. */
  readonly handedOver: number;
  readonly load: string;
}

async function phase(
  path: string,
  o: {
    seconds: number;
    batch: number;
    held: number;
    keep: number;
    bulk: boolean;
    normal: boolean;
    hogs: number;
  },
): Promise<Phase> {
  const hogs = Array.from(
    { length: o.hogs },
    () => new Deno.Command("sh", { args: ["-c", "while :; do :; done"] }).spawn(),
  );
  const t0 = performance.now();
  const writer = createWorkerWriter(path, {
    low: !o.normal,
    onEscalate: (info) =>
      console.log(
        `  escalated after ${((performance.now() - t0) / 1000).toFixed(1)} s: ` +
          JSON.stringify(info),
      ),
  });
  const next = batchMaker(o.batch);
  let inFlight = 0;
  let rows = 0;
  let counting = false;
  try {
    // One second to start the thread and settle, then the measured window.
    const warm = performance.now() + 1000;
    const end = warm + o.seconds * 1000;
    let started = 0;
    let cpuBefore = process.cpuUsage();
    await new Promise<void>((done) => {
      const pump = () => {
        const now = performance.now();
        if (!counting && now >= warm) {
          counting = true;
          started = now;
          cpuBefore = process.cpuUsage();
          rows = 0;
        }
        if (now >= end) {
          if (inFlight === 0) done();
          return;
        }
        while (inFlight + o.batch <= o.held) {
          inFlight += o.batch;
          writer.writeLines(next(), {
            count: o.batch,
            defer: true,
            bulk: o.bulk,
            keep: o.keep,
          }).then((n) => {
            inFlight -= o.batch;
            rows += n;
            pump();
          }, (err) => {
            console.error(err);
            inFlight -= o.batch;
          });
        }
      };
      pump();
      // The pump refills on answers; a timer ends a window with nothing in flight.
      const tick = setInterval(() => {
        pump();
        if (performance.now() >= end && inFlight === 0) {
          clearInterval(tick);
          done();
        }
      }, 50);
    });
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    return {
      hogs: o.hogs,
      rate: rows / seconds,
      cpuUs: (cpu.user + cpu.system) / rows,
      rows,
      escalations: writer.escalations(),
      handedOver: writer.handedOver(),
      load: loadAverage(),
    };
  } finally {
    await writer.close();
    for (const h of hogs) {
      h.kill("SIGKILL");
      await h.status;
    }
  }
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      seconds: { type: "string", default: "10" },
      hogs: { type: "string", default: "0,1,2" },
      batch: { type: "string", default: "64" },
      held: { type: "string", default: "10000" },
      keep: { type: "string", default: "100000" },
      /** Mark the batches `bulk`, as the write queue does once it is behind. */
      bulk: { type: "boolean", default: false },
      /** Start the writer thread at normal priority (no nice 19, no escalation). */
      normal: { type: "boolean", default: false },
    },
  });
  const o = {
    seconds: Number(values.seconds),
    batch: Number(values.batch),
    held: Number(values.held),
    keep: Number(values.keep),
    bulk: values.bulk,
    normal: values.normal,
  };
  const dir = await Deno.makeTempDir({ prefix: "waf-log-writer-" });
  const path = `${dir}/waf.db`;
  try {
    const db = openStore(path, { now: Date.now() });
    // The table at `keep` rows already: every write then also deletes as many old ones.
    const repo = createAccessLogRepo(db, lineFormat);
    const fill = batchMaker(1000);
    for (let n = 0; n < o.keep; n += 1000) repo.insertLines(fill());
    db.close();
    console.log(`load average at the start: ${loadAverage()}`);
    const phases: Phase[] = [];
    for (const hogs of values.hogs.split(",").map(Number)) {
      const p = await phase(path, { ...o, hogs });
      phases.push(p);
      console.log(
        `${hogs} CPU hog(s): ${p.rate.toFixed(0)} records/s, ${
          p.cpuUs.toFixed(1)
        } µs CPU a record ` +
          `(${p.rows} in ${o.seconds} s, ` +
          `batches of ${o.batch}${o.bulk ? " bulk" : ""}, ${o.held} held at most), ` +
          `writer escalations ${p.escalations} (${p.handedOver} batches handed over), ` +
          `load average ${p.load}`,
      );
    }
    const base = phases[0];
    if (base) {
      for (const p of phases.slice(1)) {
        console.log(
          `  ${p.hogs} hog(s) / ${base.hogs}: ${
            (100 * p.rate / base.rate).toFixed(1)
          }% of the rate`,
        );
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
