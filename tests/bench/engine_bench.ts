/**
 * Per-request cost of the semantic engine, as ratios against a benign GET in the same run.
 *
 * ```sh
 * deno bench tests/bench/engine_bench.ts
 * ```
 */

import { inspect } from "../../engine/inspect.ts";
import type { EngineRequest } from "../../engine/types.ts";
import { BODIES } from "./engine_bodies.ts";

const BROWSER_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["host", "shop.example.com"],
  [
    "user-agent",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) " +
    "Chrome/114.0.0.0 Safari/537.36",
  ],
  ["accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"],
  ["accept-encoding", "gzip, deflate, br"],
  ["accept-language", "en-US,en;q=0.9"],
  ["referer", "https://shop.example.com/catalog?category=shoes&page=1"],
  ["cookie", "sid=6f1c2a9e8b7d4c3f; theme=dark; consent=1"],
  ["sec-ch-ua", '"Not.A/Brand";v="8", "Chromium";v="114"'],
];

const benignGet: EngineRequest = {
  method: "GET",
  path: "/catalog/shoes/running",
  query: "q=trail+running+shoes&size=42&sort=price_asc&page=2",
  headers: BROWSER_HEADERS,
};

const benignJson: EngineRequest = {
  method: "POST",
  path: "/api/v1/orders",
  query: "",
  headers: [...BROWSER_HEADERS, ["content-type", "application/json"]],
  body: new TextEncoder().encode(JSON.stringify({
    items: [{ sku: "RUN-42-BLK", qty: 1 }, { sku: "SOCK-M", qty: 3 }],
    note: "Please leave the parcel at the door, or with the neighbour if nobody's home.",
    address: { street: "12 Main St.", city: "Springfield", zip: "12345" },
  })),
};

/** Session, analytics and consent cookies: long opaque tokens that must not be decoded. */
const benignCookies: EngineRequest = {
  method: "GET",
  path: "/account/orders",
  query: "page=1",
  headers: [
    ...BROWSER_HEADERS.filter(([name]) => name !== "cookie"),
    [
      "cookie",
      "_ga=GA1.2.1843290132.1688377708; _gid=GA1.2.771839510.1688377708; " +
      "session=x8Kz9QmT4vLp2wRbN7cYd3FjHs6AeUq1; csrftoken=Vb3nQ9wZr7Lk2PmX8tYc5HdJf4Gs1AeU; " +
      "OptanonConsent=isGpcEnabled=0&datestamp=Mon+Jul+03+2023&version=202301.1.0",
    ],
  ],
};

const attack: EngineRequest = {
  method: "GET",
  path: "/catalog",
  query:
    "id=1%27%20union%20select%20username,password%20from%20users--&q=%3Csvg%20onload%3Dalert(1)%3E",
  headers: BROWSER_HEADERS,
};

Deno.bench("inspect() a typical benign GET", { group: "inspect", baseline: true }, () => {
  inspect(benignGet, { level: "balanced" });
});

Deno.bench("inspect() a benign JSON POST", { group: "inspect" }, () => {
  inspect(benignJson, { level: "balanced" });
});

Deno.bench("inspect() a benign GET with tracking cookies", { group: "inspect" }, () => {
  inspect(benignCookies, { level: "balanced" });
});

Deno.bench("inspect() an attack request", { group: "inspect" }, () => {
  inspect(attack, { level: "balanced" });
});

/**
 * The loops above repeat one request, so its headers come from the header memo after the first
 * iteration, as a returning browser's do. Here every iteration is a browser the engine has not
 * seen (its User-Agent and Referer are new), which is the cost of a memo miss.
 */
let visitor = 0;
Deno.bench("inspect() a benign GET from a browser not seen before", { group: "inspect" }, () => {
  visitor++;
  inspect({
    ...benignGet,
    headers: BROWSER_HEADERS.map(([name, value]) =>
      name === "user-agent" || name === "referer" ? [name, `${value}${visitor}`] : [name, value]
    ),
  }, { level: "balanced" });
});

/**
 * Whole bodies at the default inspection limit (1 MiB): the cost per byte of judging every
 * character, against a plain regex scan of the same bytes in the same run (the baseline), so
 * the ratios hold on a loaded machine. The bodies are in `engine_bodies.ts`.
 */
/** What the engine is compared with: one pass of a plain regex over the same text. */
const SCAN = /<script|union\s+select|\.\.\/|\$\{jndi/gi;
Deno.bench("regex scan of 1 MiB of prose", { group: "body", baseline: true, n: 20 }, () => {
  const text = new TextDecoder().decode(BODIES[0]![1].body);
  SCAN.lastIndex = 0;
  while (SCAN.exec(text) !== null);
});
for (const [name, req] of BODIES) {
  Deno.bench(`inspect() ${name}`, { group: "body", n: 10, warmup: 2 }, () => {
    inspect(req, { level: "balanced" });
  });
}
