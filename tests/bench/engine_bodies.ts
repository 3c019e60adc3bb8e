/**
 * The 1 MiB request bodies of the engine benchmarks (`engine_bench.ts`,
 * `scripts/bench_engine_ab.ts`): typical text first, then shapes built to be expensive, runs of
 * one opening character that a careless pattern would rescan from every start.
 */

import type { EngineRequest } from "../../engine/types.ts";

const HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["host", "shop.example.com"],
  ["user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/114.0.0.0 Safari/537.36"],
];

/**
 * Whole bodies at the default inspection limit (1 MiB): the cost per byte of judging every
 * character, against a plain regex scan of the same bytes in the same run (the baseline), so
 * the ratios hold on a loaded machine. Typical text first, then shapes built to be expensive:
 * runs of one opening character that a careless pattern would rescan from every start.
 */
export const MIB = 1 << 20;
const PROSE_WORDS = ("Our committee will select a venue for the union meeting; members can " +
  "exec their votes online. It's a fine plan, isn't it? The java lang courses start in May, " +
  "and the ls 300 lexus (2019) is for sale at 12,500 - call 555-0100.").split(" ");

function repeatTo(size: number, next: (i: number) => string): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    const part = next(i);
    parts.push(part);
    length += part.length;
  }
  return parts.join("").slice(0, size);
}

function bodyRequest(contentType: string, text: string): EngineRequest {
  return {
    method: "POST",
    path: "/api/v1/submit",
    query: "",
    headers: [...HEADERS, ["content-type", contentType]],
    body: new TextEncoder().encode(text),
  };
}

const prose = repeatTo(MIB, (i) => PROSE_WORDS[(i * 7) % PROSE_WORDS.length] + " ");
export const BODIES: ReadonlyArray<readonly [string, EngineRequest]> = [
  ["1 MiB of prose", bodyRequest("text/plain", prose)],
  [
    "1 MiB of JSON records",
    bodyRequest(
      "application/json",
      "[" + repeatTo(MIB - 2, (i) =>
        JSON.stringify({
          id: i,
          name: `Customer ${i}`,
          email: `c${i}@example.com`,
          note: "Please leave the parcel at the door, it's fine (really).",
          tags: ["retail", "eu"],
          total: 12.5,
        }) + ",") +
        "{}]",
    ),
  ],
  [
    "1 MiB of HTML",
    bodyRequest(
      "text/html",
      repeatTo(
        MIB,
        (i) =>
          `<div class="item" id="i${i}"><a href="/p/${i}?x=1&amp;y=2" title="Item ${i}">` +
          `Item's "name"</a><img src="/img/${i}.png" alt="pic"><p style="color:red">Some ` +
          `<b>bold</b> text &amp; more.</p></div>\n`,
      ),
    ),
  ],
  [
    "1 MiB of form fields",
    bodyRequest(
      "application/x-www-form-urlencoded",
      repeatTo(MIB, (i) => `field${i}=${encodeURIComponent(`a value, it's here (ok) ${i}`)}&`),
    ),
  ],
  ["1 MiB of '<'", bodyRequest("text/plain", "<".repeat(MIB))],
  ["1 MiB of quotes", bodyRequest("text/plain", "'\"".repeat(MIB / 2))],
  ["1 MiB of '%'", bodyRequest("text/plain", "%".repeat(MIB))],
  ["1 MiB of '${'", bodyRequest("text/plain", "${".repeat(MIB / 2))],
  ["1 MiB of line breaks", bodyRequest("text/plain", "x" + "\n".repeat(MIB - 1))],
  ["1 MiB of nested JSON arrays", bodyRequest("application/json", "[".repeat(MIB))],
  ["1 MiB of hostile markup", bodyRequest("text/html", `<a onx='("`.repeat(MIB / 10))],
  [
    "1 MiB of SQL-dense text",
    bodyRequest(
      "text/plain",
      repeatTo(MIB, (i) => `1 or ${i}=${i} and (select a from t where b='c') union `),
    ),
  ],
];
