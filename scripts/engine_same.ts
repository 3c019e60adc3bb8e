/**
 * Proves an engine change keeps every verdict: the engine at a git revision and the working
 * tree's judge the same requests, and every inspection (each finding with its score, rule,
 * location and evidence, the blocking one, truncation) must be identical.
 *
 * ```sh
 * deno run -A scripts/engine_same.ts [--revision main] \
 *   [--payloads ../shared/corpus/payloads/attacks.jsonl] \
 *   [--dir ../shared/corpus/blazehttp-dev] [--dir ../shared/corpus/gotestwaf-dev]
 * ```
 *
 * Each payload of the payload corpus is placed everywhere `deno task corpus --mode payloads`
 * places it, and also where the engine's shortcuts apply: a query and a form field encoded the
 * way browsers encode forms (spaces as `+`), the query as sent (unencoded), the Host header and
 * the method. The request files (`.black`, `.white`) under each `--dir` and its sub-folders are
 * judged as they are. The corpora stay outside the repository; a missing one exits with status 2.
 * Exits 1 on the first differences (up to ten are listed).
 *
 * With `--long N`, every Nth payload is also put into about 40 KB of prose (so it is judged in
 * the windows of a long value, where the engine's shortcuts for long texts apply): as
 * text/plain, as a JSON string, as a JSON string with `+` for its spaces among prose holding
 * phone numbers (`+44 ...`), and as a form field, at an offset that moves with the payload so
 * windows' edges fall on all parts of it.
 *
 * ```sh
 * deno run -A scripts/engine_same.ts --long 25 --payloads ../shared/corpus/payloads/attacks.jsonl
 * ```
 *
 * With `--verdicts` only the verdict is compared (blocked or not, and by which rule where), so
 * a change meant to alter verdicts can be reviewed: every request whose verdict changed is
 * listed (up to `--max`, 200 by default), newly blocked ones first. `--class` keeps the
 * payloads of the named classes only.
 *
 * ```sh
 * deno run -A scripts/engine_same.ts --verdicts --class open-redirect --class ldap \
 *   --payloads ../shared/corpus/payloads/attacks.jsonl --dir ../shared/corpus/blazehttp-dev
 * ```
 */
import { parseArgs } from "node:util";
import { inspect } from "../engine/inspect.ts";
import type { EngineRequest, InspectOptions } from "../engine/types.ts";
import { engineAt, type Inspect } from "./bench_engine_ab.ts";
import { place, PLACEMENTS } from "./corpus_payloads.ts";
import { corpusFiles } from "./corpus.ts";
import { parseRawRequest, toEngineRequest } from "./raw_http.ts";
import { prose } from "../tests/bench/engine_body_kinds.ts";

const HEADERS = [
  ["host", "shop.example"],
  ["user-agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0 Safari/537.36"],
] as const;

/** The payload's requests: the corpus tool's placements and the shortcuts' own. */
function requestsFor(payload: string): EngineRequest[] {
  const out: EngineRequest[] = [];
  for (const where of PLACEMENTS) {
    const req = place(payload, where);
    if (req !== undefined) out.push(req);
  }
  const form = new URLSearchParams({ q: payload, remember: "on" }).toString();
  out.push({ method: "GET", path: "/search", query: form, headers: HEADERS });
  out.push({
    method: "POST",
    path: "/login",
    query: "",
    headers: [...HEADERS, ["content-type", "application/x-www-form-urlencoded"]],
    body: new TextEncoder().encode(form),
  });
  out.push({ method: "GET", path: "/search", query: `q=${payload}`, headers: HEADERS });
  out.push({ method: "GET", path: "/", query: "", headers: [["host", payload], HEADERS[1]] });
  out.push({ method: payload, path: "/", query: "", headers: HEADERS });
  return out;
}

/** Prose a long body is made of, and the same with phone numbers (`+` in a JSON string). */
const LONG_PROSE = prose(40_000, 7);
const LONG_PHONES = LONG_PROSE.replace(/ (\d+) /g, " +44 $1 ");

/** The payload inside about 40 KB of prose, in each long-body shape (see `--long`). */
function longRequestsFor(payload: string, n: number): EngineRequest[] {
  const at = (n * 7919) % (LONG_PROSE.length - 1);
  const text = LONG_PROSE.slice(0, at) + payload + LONG_PROSE.slice(at);
  const phones = LONG_PHONES.slice(0, at) + payload.replaceAll(" ", "+") + LONG_PHONES.slice(at);
  const post = (type: string, body: string): EngineRequest => ({
    method: "POST",
    path: "/notes",
    query: "",
    headers: [...HEADERS, ["content-type", type]],
    body: new TextEncoder().encode(body),
  });
  return [
    post("text/plain", text),
    post("application/json", JSON.stringify({ note: text })),
    post("application/json", JSON.stringify({ note: phones })),
    post("application/x-www-form-urlencoded", new URLSearchParams({ note: text }).toString()),
  ];
}

async function* payloads(file: string, classes: readonly string[]): AsyncGenerator<string> {
  const text = await Deno.readTextFile(file);
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const p = JSON.parse(line) as { payload: string; class: string };
    if (classes.length === 0 || classes.includes(p.class)) yield p.payload;
  }
}

/** What decides a request: the blocking rule and where it fired, or `pass`. */
function verdictOf(result: ReturnType<Inspect>): string {
  const b = result.blocking;
  return b === undefined ? "pass" : `${b.ruleId} ${b.score} ${b.location}`;
}

/** Entry point; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      revision: { type: "string", default: "main" },
      payloads: { type: "string" },
      dir: { type: "string", multiple: true, default: [] },
      class: { type: "string", multiple: true, default: [] },
      verdicts: { type: "boolean", default: false },
      max: { type: "string", default: "200" },
      long: { type: "string", default: "0" },
    },
  });
  const max = values.verdicts ? Number(values.max) : 10;
  const sources = [...(values.payloads ? [values.payloads] : []), ...values.dir];
  if (sources.length === 0) {
    console.error("usage: engine_same.ts [--revision main] --payloads <file> | --dir <corpus>");
    return 2;
  }
  for (const path of sources) {
    try {
      await Deno.stat(path);
    } catch {
      console.error(`Corpus not found: "${path}"`);
      return 2;
    }
  }
  const before = await engineAt(values.revision);
  const after = inspect as Inspect;
  const differences: string[] = [];
  let judged = 0;
  let changed = 0;
  const compare = (req: EngineRequest, what: string) => {
    for (const level of ["balanced", "strict"] as const) {
      const opts: InspectOptions = { level };
      const ra = before(req, opts);
      const rb = after(req, opts);
      const a = values.verdicts ? verdictOf(ra) : JSON.stringify(ra);
      const b = values.verdicts ? verdictOf(rb) : JSON.stringify(rb);
      judged++;
      if (a === b) continue;
      changed++;
      if (differences.length < max) {
        differences.push(`${what} (${level}):\n  ${values.revision}: ${a}\n  now: ${b}`);
      }
    }
  };
  const long = Number(values.long);
  if (values.payloads) {
    let n = 0;
    for await (const payload of payloads(values.payloads, values.class)) {
      const what = `payload ${JSON.stringify(payload)}`;
      if (long > 0) {
        // Only the long bodies: the short placements are what the run without it compares.
        if (n % long === 0) {
          for (const req of longRequestsFor(payload, n)) compare(req, `${what} (long)`);
        }
      } else for (const req of requestsFor(payload)) compare(req, what);
      n++;
    }
    console.log(`payloads: ${n}${long > 0 ? `, every ${long}th in long bodies` : ""}`);
  }
  for (const dir of values.dir) {
    let n = 0;
    for (const file of await corpusFiles(dir)) {
      const raw = parseRawRequest(await Deno.readFile(`${dir}/${file}`));
      compare(toEngineRequest(raw), `${dir}/${file}`);
      n++;
    }
    console.log(`${dir}: ${n} requests`);
  }
  console.log(`inspections compared: ${judged}, different: ${changed}`);
  // Newly blocked first: they are what a reviewer checks for false positives.
  const order = (d: string) => (d.includes(": pass\n") ? 0 : 1);
  for (const d of differences.sort((x, y) => order(x) - order(y))) console.log(d);
  return changed === 0 ? 0 : 1;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
