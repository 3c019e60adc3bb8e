/**
 * Realistic 1 MiB request bodies for the body-throughput benchmark (`engine_body_bench.ts`,
 * `scripts/bench_engine_body.ts`): a JSON API document, an urlencoded form with many fields,
 * English prose as text/plain and as one JSON string, a multipart form with a long text field,
 * and a typical benign GET. Every body is built from a seeded generator, so each run judges the
 * same bytes.
 */

import type { EngineRequest } from "../../engine/types.ts";
import { seeded } from "../_helpers/seeded.ts";

/** The size of every body. */
export const BODY_BYTES = 1 << 20;

const HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["host", "shop.example.com"],
  ["user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/126.0.0.0 Safari/537.36"],
  ["accept", "application/json, text/plain, */*"],
  ["accept-language", "en-GB,en;q=0.9"],
  ["cookie", "sid=6f1c2a9e8b7d4c3f; theme=dark; consent=1"],
];

/**
 * Common English words, some SQL and shell keywords among them as prose has them (select,
 * order, from, where, table, join, find, sort, print).
 */
const WORDS = (
  "the of and to a in is it you that he was for on are with as his they be at one have this " +
  "from or had by word but what some we can out other were all there when up use your how said " +
  "an each she which do their time if will way about many then them write would like so these " +
  "her long make thing see him two has look more day could go come did number sound no most " +
  "people my over know water than call first who may down side been now find any new work part " +
  "take get place made live where after back little only round man year came show every good " +
  "me give our under name very through just form sentence great think say help low line differ " +
  "turn cause much mean before move right boy old too same tell does set three want air well " +
  "also play small end put home read hand port large spell add even land here must big high " +
  "such follow act why ask men change went light kind off need house picture try us again " +
  "animal point mother world near build self earth father head stand own page should country " +
  "found answer school grow study still learn plant cover food sun four between state keep eye " +
  "never last let thought city tree cross farm hard start might story saw far sea draw left " +
  "late run while press close night real life few north open seem together next white children " +
  "begin got walk example ease paper group always music those both mark often letter until " +
  "mile river car feet care second book carry took science eat room friend began idea fish " +
  "mountain stop once base hear horse cut sure watch color face wood main enough plain girl " +
  "usual young ready above ever red list though feel talk bird soon body dog family direct pose " +
  "leave song measure door product black short numeral class wind question happen complete " +
  "ship area half rock order fire south problem piece told knew pass since top whole king space " +
  "heard best hour better during hundred five remember step early hold west ground interest " +
  "reach fast verb sing listen six table travel less morning ten simple several vowel toward " +
  "war lay against pattern slow center love person money serve appear road map rain rule " +
  "govern pull cold notice voice unit power town fine certain fly fall lead cry dark machine " +
  "note wait plan figure star box noun field rest correct able pound done beauty drive stood " +
  "contain front teach week final gave green oh quick develop ocean warm free minute strong " +
  "special mind behind clear tail produce fact street inch multiply nothing course stay wheel " +
  "full force blue object decide surface deep moon island foot system busy test record boat " +
  "common gold possible plane stead dry wonder laugh thousand ago ran check game shape equate " +
  "hot miss brought heat snow tire bring yes distant fill east paint language among select " +
  "order table join find sort print"
).split(" ");
const NAMES = ("Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy " +
  "Rupert Sybil Trent Victor Walter Yvonne O'Brien D'Angelo").split(" ");
const CITIES = ("London Paris Berlin Madrid Rome Vienna Prague Dublin Lisbon Oslo Zurich " +
  "Amsterdam Brussels Copenhagen Helsinki Warsaw").split(" ");

/** One English sentence: words, commas, sometimes a number, a parenthesis or a quote. */
function sentence(next: () => number): string {
  const n = 6 + Math.floor(next() * 18);
  const words: string[] = [];
  for (let i = 0; i < n; i++) {
    let w = WORDS[Math.floor(next() * WORDS.length)]!;
    const r = next();
    if (r < 0.02) w = `${Math.floor(next() * 2000)}`;
    else if (r < 0.03) w = `(${w})`;
    else if (r < 0.04) w = `"${w}"`;
    else if (r < 0.05) w = `${w}'s`;
    else if (r < 0.06) w = `${NAMES[Math.floor(next() * NAMES.length)]}`;
    if (i < n - 1 && next() < 0.08) w += next() < 0.8 ? "," : next() < 0.5 ? ":" : " -";
    words.push(w);
  }
  const first = words[0]!;
  words[0] = first.charAt(0).toUpperCase() + first.slice(1);
  const stop = next();
  return words.join(" ") + (stop < 0.85 ? "." : stop < 0.93 ? "?" : "!");
}

/** English prose of `size` characters: sentences in paragraphs. */
export function prose(size: number, seed = 1): string {
  const next = seeded(seed).next;
  const parts: string[] = [];
  let length = 0;
  while (length < size) {
    const s = sentence(next) + (next() < 0.15 ? "\n\n" : " ");
    parts.push(s);
    length += s.length;
  }
  return parts.join("").slice(0, size);
}

function pick<T>(next: () => number, xs: readonly T[]): T {
  return xs[Math.floor(next() * xs.length)]!;
}

/** One order of a JSON API listing: nested objects and arrays of strings and numbers. */
function order(next: () => number, i: number): unknown {
  const name = `${pick(next, NAMES)} ${pick(next, NAMES)}`;
  const items = Array.from({ length: 1 + Math.floor(next() * 4) }, (_, k) => ({
    sku: `SKU-${(i * 7 + k) % 9973}-${pick(next, ["BLK", "WHT", "RED", "M", "XL"])}`,
    title: sentence(next).slice(0, 40),
    qty: 1 + Math.floor(next() * 5),
    price: Math.round(next() * 20000) / 100,
    options: { gift: next() < 0.2, colour: pick(next, ["black", "white", "navy"]) },
  }));
  return {
    id: 100000 + i,
    type: "order",
    attributes: {
      created_at: `2026-11-${String(1 + (i % 28)).padStart(2, "0")}T${
        String(i % 24).padStart(2, "0")
      }:15:00Z`,
      status: pick(next, ["paid", "shipped", "pending", "refunded"]),
      customer: {
        name,
        email: `${name.toLowerCase().replace(/[^a-z]/g, ".")}@example.com`,
        phone: `+44 20 7946 ${String(i % 10000).padStart(4, "0")}`,
        address: {
          street: `${1 + (i % 200)} ${pick(next, ["High St", "Station Rd", "Church Lane"])}`,
          city: pick(next, CITIES),
          zip: `${10000 + (i % 89999)}`,
        },
      },
      items,
      total: Math.round(next() * 50000) / 100,
      note: next() < 0.4 ? sentence(next) : "",
      tags: [pick(next, ["retail", "wholesale"]), pick(next, ["eu", "uk", "us"])],
    },
    links: { self: `https://api.example.com/v1/orders/${100000 + i}` },
  };
}

/** A JSON API document of about `size` bytes: `{"data":[orders...],"meta":{...}}`. */
export function jsonDocument(size: number, seed = 2): string {
  const next = seeded(seed).next;
  const orders: string[] = [];
  let length = 0;
  const tail = `],"meta":{"page":1,"per_page":1000,"total":123456}}`;
  for (let i = 0; length < size - tail.length - 600; i++) {
    const s = JSON.stringify(order(next, i));
    orders.push(s);
    length += s.length + 1;
  }
  return `{"data":[${orders.join(",")}${tail}`;
}

/** An urlencoded form of about `size` bytes with many fields, as a long admin form posts. */
export function form(size: number, seed = 3): string {
  const next = seeded(seed).next;
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    const kind = i % 5;
    const value = kind === 0
      ? sentence(next)
      : kind === 1
      ? `${pick(next, NAMES)} ${pick(next, NAMES)}`
      : kind === 2
      ? String(Math.floor(next() * 100000))
      : kind === 3
      ? `${pick(next, NAMES).toLowerCase()}@example.com`
      : pick(next, ["on", "off", "2026-12-02", "GBP", "en-GB"]);
    const field = `items[${i >> 3}][${pick(next, ["name", "note", "qty", "mail", "flag"])}]`;
    const pair = `${encodeURIComponent(field)}=${encodeURIComponent(value).replaceAll("%20", "+")}`;
    parts.push(pair);
    length += pair.length + 1;
  }
  return parts.join("&").slice(0, size);
}

/** A multipart form: a few short fields and one long text field (a message, an article). */
export function multipart(size: number, boundary: string, seed = 4): string {
  const field = (name: string, value: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = field("title", "Notes from the committee") + field("author", "Olivia O'Brien") +
    field("tags", "meeting, minutes, 2026");
  const end = `--${boundary}--\r\n`;
  const text = prose(size - head.length - end.length - 100, seed);
  return head + field("body", text) + end;
}

function post(contentType: string, text: string): EngineRequest {
  const body = new TextEncoder().encode(text);
  return {
    method: "POST",
    path: "/api/v1/submit",
    query: "",
    headers: [
      ...HEADERS,
      ["content-type", contentType],
      ["content-length", String(body.length)],
    ],
    body,
  };
}

const BOUNDARY = "----WebKitFormBoundary7MA4YWxkTrZu0gW";

/** The body kinds, each about {@link BODY_BYTES} long. */
export const BODY_KINDS: ReadonlyArray<readonly [string, EngineRequest]> = [
  ["JSON API document", post("application/json", jsonDocument(BODY_BYTES))],
  ["urlencoded form", post("application/x-www-form-urlencoded", form(BODY_BYTES))],
  ["prose as text/plain", post("text/plain; charset=utf-8", prose(BODY_BYTES))],
  [
    "prose as a JSON string",
    post("application/json", JSON.stringify({ message: prose(BODY_BYTES - 20) })),
  ],
  [
    "multipart form",
    post(`multipart/form-data; boundary=${BOUNDARY}`, multipart(BODY_BYTES, BOUNDARY)),
  ],
];

/** The kinds the target names (>= 40 MB/s): JSON, form and prose. */
export const TARGET_KINDS: ReadonlySet<string> = new Set([
  "JSON API document",
  "urlencoded form",
  "prose as text/plain",
  "prose as a JSON string",
]);

/** A typical benign GET from a browser: a catalogue page with a query and cookies. */
export const BENIGN_GET: EngineRequest = {
  method: "GET",
  path: "/catalog/shoes/running",
  query: "q=trail+running+shoes&size=42&sort=price_asc&page=2",
  headers: [
    ["host", "shop.example.com"],
    [
      "user-agent",
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) " +
      "Chrome/126.0.0.0 Safari/537.36",
    ],
    ["accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"],
    ["accept-encoding", "gzip, deflate, br"],
    ["accept-language", "en-US,en;q=0.9"],
    ["referer", "https://shop.example.com/catalog?category=shoes&page=1"],
    ["cookie", "sid=6f1c2a9e8b7d4c3f; theme=dark; consent=1"],
    ["sec-ch-ua", '"Not.A/Brand";v="8", "Chromium";v="126"'],
  ],
};
