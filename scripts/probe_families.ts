/**
 * Hand-written attack variants of the families issue #33 names (`tests/testdata/probes/*.txt`,
 * one payload a line, `#` for comments), judged by the engine in process: each in a query
 * parameter and a JSON string value, then every payload that blocks in the query also in the
 * other placements and encodings a WAF meets (a custom header, a cookie, a multipart field, a
 * SOAP body spelled in XML character references, a JSON string of `\uXXXX` escapes, base64 in a
 * query, a raw body without a type, a path segment). Prints the misses and the counts.
 *
 * ```sh
 * deno run -A scripts/probe_families.ts [--level balanced] [--engine DIR] [tests/testdata/probes/x.txt ...]
 * ```
 *
 * `--engine` names another tree's `engine/` (a baseline extracted with `git archive`), so a
 * change's before and after are read from the same lists. The lists are not samples of any
 * corpus: they are variants written from the families' documentation (PHP, Java, Unix and
 * Windows commands, SQL dialects, template engines, Node.js, Python).
 */

import { parseArgs } from "node:util";
import type { EngineRequest, Inspection, InspectOptions } from "../engine/types.ts";
import { place } from "./corpus_payloads.ts";

const ENC = new TextEncoder();
const UA: [string, string] = ["user-agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0"];

function xmlReferences(s: string): string {
  return [...s].map((c) => `&#x${c.codePointAt(0)!.toString(16)};`).join("");
}

function base64(s: string): string {
  return btoa(String.fromCharCode(...ENC.encode(s)));
}

function jsonEscapes(s: string): string {
  return [...s].map((c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")).join("");
}

/** The placements beyond the query, each a request or undefined where it cannot go. */
const PLACEMENTS: Record<string, (v: string) => EngineRequest | undefined> = {
  header: (v) => place(v, "header", { header: "x-3f9a1c" }),
  cookie: (v) => place(v, "cookie"),
  multipart: (v) => place(v, "multipart"),
  soap: (v) => ({
    method: "POST",
    path: "/soap",
    query: "",
    headers: [UA, ["content-type", "text/xml"]],
    body: ENC.encode(
      `<?xml version="1.0"?><Envelope><Body><a>${xmlReferences(v)}</a></Body></Envelope>`,
    ),
  }),
  json_escaped: (v) => ({
    method: "POST",
    path: "/api",
    query: "",
    headers: [UA, ["content-type", "application/json"]],
    body: ENC.encode(`{"test":true,"a1b2":"${jsonEscapes(v)}"}`),
  }),
  base64_query: (v) => place(base64(v), "query"),
  raw_body: (v) => ({ method: "POST", path: "/x", query: "", headers: [], body: ENC.encode(v) }),
  path_segment: (v) => place(v, "path"),
};

/** Entry point; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { level: { type: "string", default: "balanced" }, engine: { type: "string" } },
    allowPositionals: true,
  });
  const engine = values.engine === undefined
    ? "../engine/inspect.ts"
    : new URL(`file://${Deno.realPathSync(values.engine)}/inspect.ts`).href;
  const { inspect } = await import(engine) as {
    inspect: (req: EngineRequest, opts: InspectOptions) => Inspection;
  };
  const opts: InspectOptions = { level: values.level as InspectOptions["level"] };
  const files = positionals.length > 0 ? positionals : [...Deno.readDirSync(
    new URL("../tests/testdata/probes/", import.meta.url),
  )].filter((e) => e.name.endsWith(".txt")).map((e) =>
    new URL(`../tests/testdata/probes/${e.name}`, import.meta.url).pathname
  ).sort();
  const totals: Record<string, [number, number]> = {};
  for (const file of files) {
    const lines = Deno.readTextFileSync(file).split("\n").filter((l) =>
      l.trim() !== "" && !l.startsWith("#")
    );
    let missed = 0;
    for (const v of lines) {
      const inQuery = inspect(place(v, "query")!, opts);
      const inJson = inspect(place(v, "json")!, opts);
      if (inQuery.blocking === undefined || inJson.blocking === undefined) {
        missed++;
        const best = inQuery.findings[0];
        console.log(
          `  miss ${inQuery.blocking ? "B" : "."}${inJson.blocking ? "B" : "."} ${
            JSON.stringify(v)
          }${best === undefined ? "" : ` (${best.ruleId} ${best.score})`}`,
        );
      }
      if (inQuery.blocking === undefined) continue;
      for (const [name, make] of Object.entries(PLACEMENTS)) {
        const req = make(v);
        if (req === undefined) continue;
        const t = totals[name] ??= [0, 0];
        t[1]++;
        if (inspect(req, opts).blocking !== undefined) t[0]++;
        else console.log(`  miss in ${name}: ${JSON.stringify(v)}`);
      }
    }
    const name = file.split("/").pop()!;
    console.log(`${name}: ${lines.length - missed}/${lines.length} block in a query and JSON`);
  }
  console.log("payloads that block in a query, in other placements:");
  for (const [name, [blocked, n]] of Object.entries(totals)) {
    console.log(`  ${name}: ${blocked}/${n}`);
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
