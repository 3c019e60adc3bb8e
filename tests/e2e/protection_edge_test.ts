/** Edge settings through the data plane: header rules, the response cache and compression. */
import { gunzipSync } from "node:zlib";
import { brotliDecompressSync } from "node:zlib";
import { Buffer } from "node:buffer";
import http from "node:http";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite, apiFor, hit, steps } from "../_helpers/protection.ts";
import { localServer } from "../_helpers/local_server.ts";
import { startTestServer } from "../_helpers/server.ts";

const SCRIPT = "console.log('edge');\n".repeat(200);

/** An upstream with static-looking resources; counts requests per path. */
function staticUpstream() {
  const counts: Record<string, number> = {};
  const server = localServer((req) => {
    const path = new URL(req.url).pathname;
    counts[path] = (counts[path] ?? 0) + 1;
    const cc = { "cache-control": "public, max-age=60" };
    switch (path) {
      case "/static/app.js":
        return new Response(SCRIPT, {
          headers: { ...cc, "content-type": "application/javascript", server: "up/1" },
        });
      case "/static/private":
        return new Response("mine", { headers: { "cache-control": "private, max-age=60" } });
      case "/static/lang":
        return new Response(`hello ${req.headers.get("accept-language")}`, {
          headers: { ...cc, vary: "Accept-Language" },
        });
      case "/static/logo.png":
        return new Response(new Uint8Array(4096), {
          headers: { ...cc, "content-type": "image/png" },
        });
      case "/static/small.txt":
        return new Response("tiny", { headers: { ...cc, "content-type": "text/plain" } });
      default:
        return new Response("dynamic", { headers: { "content-type": "text/plain" } });
    }
  });
  return Object.assign(server, { counts });
}

Deno.test("response header rules set, add and remove headers per site and path, at once", async () => {
  await using up = staticUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const post = (body: unknown) => api("POST", "/api/edge/header-rules", body, "write:edge");
  assertEquals((await post({ op: "set", name: "X-Frame-Options", value: "DENY" })).status, 201);
  await post({ op: "add", name: "X-Extra", value: "a", path_prefix: "/static/" });
  await post({ op: "remove", name: "Server" });
  assertEquals((await post({ op: "set", name: "X-Bad", value: "a\r\nb: c" })).status, 400);
  const r = await hit(s, "/static/app.js");
  assertEquals([
    r.headers.get("x-frame-options"),
    r.headers.get("x-extra"),
    r.headers.get("server"),
  ], ["DENY", "a", null]);
  const other = await hit(s, "/page");
  assertEquals([other.headers.get("x-frame-options"), other.headers.get("x-extra")], [
    "DENY",
    null,
  ]);
  assertEquals((await api("GET", "/api/edge/header-rules", undefined, "read:edge")).status, 200);
  assertEquals(
    (await api("GET", "/api/edge/header-rules", undefined, "read:protection")).status,
    403,
  );
});

Deno.test("the cache serves selected cacheable responses from memory, honouring Vary, credentials, expiry and purge", async () => {
  await using up = staticUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const put = await api("PUT", "/api/edge/settings", {
    cache: { enabled: true, paths: [{ path_prefix: "/static/" }] },
  }, "write:edge");
  assertEquals(put.status, 200);

  const first = await hit(s, "/static/app.js");
  assertEquals([first.headers.get("x-waf-cache"), first.body], ["MISS", SCRIPT]);
  const second = await hit(s, "/static/app.js");
  assertEquals([second.status, second.headers.get("x-waf-cache"), second.body], [
    200,
    "HIT",
    SCRIPT,
  ]);
  assertEquals(second.headers.get("x-waf-trace-id"), second.traceId);
  ok(steps(second).includes("cache:hit"));
  assertEquals(up.counts["/static/app.js"], 1);

  await hit(s, "/static/app.js", { init: { headers: { authorization: "Bearer x" } } });
  assertEquals(up.counts["/static/app.js"], 2, "a request with credentials bypasses the cache");
  await hit(s, "/static/private");
  await hit(s, "/static/private");
  assertEquals(up.counts["/static/private"], 2, "private responses are not stored");
  await hit(s, "/page");
  await hit(s, "/page");
  assertEquals(up.counts["/page"], 2, "unselected paths are not cached");

  const en = await hit(s, "/static/lang", { init: { headers: { "accept-language": "en" } } });
  const de = await hit(s, "/static/lang", { init: { headers: { "accept-language": "de" } } });
  const en2 = await hit(s, "/static/lang", { init: { headers: { "accept-language": "en" } } });
  assertEquals([en.body, de.body, en2.body, en2.headers.get("x-waf-cache")], [
    "hello en",
    "hello de",
    "hello en",
    "HIT",
  ]);

  const attack = await hit(s, "/static/app.js?q=1%20union%20select%20password%20from%20users");
  assertEquals(attack.status, 403, "the cache never answers before the protection controls");

  s.clock.advance(61_000);
  assertEquals((await hit(s, "/static/app.js")).headers.get("x-waf-cache"), "MISS", "expired");
  assertEquals((await hit(s, "/static/app.js")).headers.get("x-waf-cache"), "HIT");
  const purge = await api(
    "POST",
    "/api/edge/cache/purge",
    { path_prefix: "/static/app" },
    "write:edge",
  );
  assertEquals((await purge.json()).purged, 1);
  assertEquals((await hit(s, "/static/app.js")).headers.get("x-waf-cache"), "MISS");
  const stats = await (await api("GET", "/api/edge/cache", undefined, "read:edge")).json();
  ok(stats.entries >= 1 && stats.bytes <= stats.max_bytes);
});

Deno.test("the cache stays under its byte cap", async () => {
  await using up = staticUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  await api("PUT", "/api/edge/settings", {
    cache: { enabled: true, max_bytes: 6000, paths: [{ path_prefix: "/static/" }] },
  });
  await hit(s, "/static/app.js");
  await hit(s, "/static/logo.png");
  const stats = await (await api("GET", "/api/edge/cache")).json();
  ok(stats.bytes <= 6000, JSON.stringify(stats));
  assertEquals(stats.entries, 1);
});

Deno.test("compression uses Brotli or gzip when accepted and the type and size qualify", async () => {
  await using up = staticUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  await api("PUT", "/api/edge/settings", {
    compression: { gzip: true, brotli: true, min_bytes: 100 },
  });
  // node:http hands over the body as sent (fetch would decode it behind our back).
  const get = (path: string, enc: string) =>
    new Promise<{ encoding: string | null; vary: string | null; bytes: Buffer }>(
      (resolve, reject) => {
        const url = new URL(`${s.dataUrl}${path}`);
        http.get({
          host: url.hostname,
          port: url.port,
          path,
          headers: { host: "shop.test", "accept-encoding": enc },
        }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({
              encoding: (res.headers["content-encoding"] as string | undefined) ?? null,
              vary: (res.headers["vary"] as string | undefined) ?? null,
              bytes: Buffer.concat(chunks),
            }));
        }).on("error", reject);
      },
    );
  const br = await get("/static/app.js", "gzip, br");
  assertEquals(br.encoding, "br");
  assertEquals(brotliDecompressSync(br.bytes).toString(), SCRIPT);
  ok(br.bytes.length < SCRIPT.length / 5);
  const gz = await get("/static/app.js", "gzip");
  assertEquals([gz.encoding, gz.vary], ["gzip", "Accept-Encoding"]);
  assertEquals(gunzipSync(gz.bytes).toString(), SCRIPT);
  assertEquals((await get("/static/app.js", "identity")).encoding, null);
  // q=0 means "not acceptable": Brotli refused, gzip still fine; both refused means neither.
  assertEquals((await get("/static/app.js", "gzip, br;q=0")).encoding, "gzip");
  assertEquals((await get("/static/app.js", "gzip;q=0, br;q=0")).encoding, null);
  assertEquals((await get("/static/app.js", "br;q=0.5, gzip;q=0.9")).encoding, "gzip");
  assertEquals(
    (await get("/static/logo.png", "gzip, br")).encoding,
    null,
    "images are not compressed",
  );
  assertEquals(
    (await get("/static/small.txt", "gzip, br")).encoding,
    null,
    "below the size threshold",
  );
});

Deno.test("compression never holds back a Server-Sent Events stream", async () => {
  let release = () => {};
  const released = new Promise<void>((r) => release = r);
  await using up = localServer(() => {
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (n === 3) {
          await released;
          return controller.close();
        }
        if (n > 0) await new Promise((r) => setTimeout(r, 50));
        controller.enqueue(new TextEncoder().encode(`data: event ${++n} ${"x".repeat(200)}\n\n`));
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  await using s = await startTestServer();
  addSite(s, up.url);
  await apiFor(s)("PUT", "/api/edge/settings", {
    compression: { gzip: true, brotli: true, min_bytes: 100 },
  });
  // A browser's EventSource sends Accept-Encoding; the events must arrive while the stream is open.
  const first = await new Promise<{ encoding: string | null; text: string }>((resolve, reject) => {
    const url = new URL(`${s.dataUrl}/events`);
    const timer = setTimeout(() => {
      release();
      reject(new Error("no event arrived while the upstream held the stream open"));
    }, 5_000);
    http.get({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      headers: { host: "shop.test", "accept-encoding": "gzip, br", accept: "text/event-stream" },
    }, (res) => {
      res.once("data", (c: Buffer) => {
        clearTimeout(timer);
        resolve({
          encoding: (res.headers["content-encoding"] as string | undefined) ?? null,
          text: c.toString(),
        });
        res.resume();
        res.on("end", () => {});
      });
    }).on("error", reject);
  });
  release();
  assertEquals(first.encoding, null);
  ok(first.text.startsWith("data: event 1 "), first.text);
});
