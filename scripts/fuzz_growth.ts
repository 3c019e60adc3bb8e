/**
 * Looks for bodies whose inspection grows faster than their size: the shape of a regular
 * expression that backtracks (the hot spans' `select ... from` trigger once took 3.9 s on 19.5 KB
 * of `select+w0+w1+...`). Each body is 16 KB of prose, then a head (a keyword, an opener of some
 * detector) and a separator, then a filler with a counter and the separator repeated; every
 * combination of the lists below is inspected as text/plain and as a form at 20 KB (least CPU time
 * of two runs); those that cost at least `--min-ms` there are inspected again at 80 KB, and a
 * combination is reported when that costs more than `--limit` times the 20 KB body (4x the size;
 * linear work is about 4x).
 *
 * ```sh
 * deno run -A scripts/fuzz_growth.ts [--limit 12] [--min-ms 6]
 * ```
 *
 * Prints the reported combinations and their times, and the worst ratio seen; exits 1 when one
 * was reported. On a shared machine a slow outlier can be noise: run the combination again alone.
 */

import { parseArgs } from "node:util";

const HEADS = [
  "select",
  "union",
  "union select",
  "insert",
  "update",
  "delete",
  "drop",
  "order by",
  "group by",
  "having",
  "waitfor",
  "exec",
  "case when",
  "or",
  "and",
  "'",
  '"',
  "(",
  "<a",
  "<script",
  "<svg",
  "on",
  "javascript:",
  "${",
  "#{",
  "{{",
  "<%",
  "<?php",
  "$(",
  "`",
  "cat",
  "nc",
  "bash -c",
  "powershell",
  "cmd /c",
  "for /f",
  "if exist",
  "java.",
  "T(",
  "@java",
  "%{",
  "jndi:",
  "../",
  "/etc/",
  "http://",
  "file://",
  "&#",
  "%25",
  "\\u",
  "document.",
  "constructor",
  "__proto__",
  '{"$',
  "*)(",
  "//",
  "import(",
  "Reflect.apply(",
  "$_=",
  "${script:",
  "$'",
  "socat",
];
const FILLERS = [
  "w",
  "a",
  "1",
  "x.",
  "a,",
  "'a'",
  "(a)",
  "a=",
  "<b>",
  "%41",
  "\\",
  "/a",
  "-a",
  "--",
  "a b",
  "@a",
  "#",
  "$a",
  "{a}",
  "[a]",
  "::",
  "..",
  "&a",
  ";a",
  "|a",
  "a'",
  'a"',
  "0x1",
  "=1",
  "!a",
];
const SEPARATORS = ["+", " ", ",", ".", "-", "_", "/", ":", "", "\t", "%20", "'", "(", "="];
const TYPES = ["text/plain", "application/x-www-form-urlencoded"];
/** A 20 KB body dearer than this is reported as it is (prose costs about 1 ms). */
const SLOW_MS = 250;
const ENC = new TextEncoder();
const PROSE = "lorem ipsum ".repeat(1400);

function body(head: string, filler: string, sep: string, size: number): Uint8Array {
  let s = PROSE + head + sep;
  for (let i = 0; s.length < size; i++) s += filler + (i % 97) + sep;
  return ENC.encode(s);
}

/** A body's inspection this long has not ended: reported as hung. */
const HUNG_MS = 10_000;

/** Inspects bodies in a worker, so an inspection that never ends can be given up. */
class Inspector {
  #worker = Inspector.#start();

  static #start(): Worker {
    return new Worker(new URL("./fuzz_growth_worker.ts", import.meta.url), { type: "module" });
  }

  /** Least CPU milliseconds of two inspections, or undefined when they did not end in time. */
  cost(type: string, body: Uint8Array): Promise<number | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#worker.terminate();
        this.#worker = Inspector.#start();
        resolve(undefined);
      }, HUNG_MS);
      this.#worker.onmessage = (e: MessageEvent<number>) => {
        clearTimeout(timer);
        resolve(e.data);
      };
      this.#worker.postMessage({ type, body });
    });
  }

  close(): void {
    this.#worker.terminate();
  }
}

/** Entry point; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      limit: { type: "string", default: "12" },
      "min-ms": { type: "string", default: "6" },
    },
  });
  const limit = Number(values.limit);
  const minMs = Number(values["min-ms"]);
  const inspector = new Inspector();
  let worst = 0;
  let reported = 0;
  let tried = 0;
  let grown = 0;
  const report = (what: string, type: string, head: string, filler: string, sep: string) => {
    reported++;
    console.log(
      `${what} ${type} head=${JSON.stringify(head)} filler=${JSON.stringify(filler)} separator=${
        JSON.stringify(sep)
      }`,
    );
  };
  for (const head of HEADS) {
    for (const filler of FILLERS) {
      for (const sep of SEPARATORS) {
        for (const type of TYPES) {
          tried++;
          const small = await inspector.cost(type, body(head, filler, sep, 20_000));
          if (small === undefined) {
            report(`hung (over ${HUNG_MS} ms at 20 KB)`, type, head, filler, sep);
            continue;
          }
          // Most bodies cost about what prose does: only the dearer ones are grown.
          if (small < minMs) continue;
          if (small > SLOW_MS) {
            // Already far past prose's cost: growing it could take minutes.
            report(`slow (${small.toFixed(0)} ms at 20 KB)`, type, head, filler, sep);
            continue;
          }
          grown++;
          const large = await inspector.cost(type, body(head, filler, sep, 80_000));
          const ratio = large === undefined ? Infinity : large / Math.max(small, 0.5);
          worst = Math.max(worst, ratio);
          if (ratio > limit) {
            const at80 = large === undefined ? "hung" : `${large.toFixed(1)} ms`;
            report(
              `${ratio.toFixed(1)}x (${small.toFixed(1)} ms -> ${at80})`,
              type,
              head,
              filler,
              sep,
            );
          }
        }
      }
    }
  }
  inspector.close();
  console.log(
    `${tried} bodies, ${grown} grown to 80 KB, ${reported} reported, worst ratio ${
      worst.toFixed(1)
    }x`,
  );
  return reported > 0 ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
