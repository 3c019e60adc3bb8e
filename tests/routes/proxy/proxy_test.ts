import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { hostFetch } from "../../_helpers/data_client.ts";
import { startTestServer, type TestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";
import { startUpstream } from "../../_helpers/upstream.ts";

const HEX32 = /^[0-9a-f]{32}$/;
const SQLI = "/search?id=1%27%20or%201=1--";

function addSite(s: TestServer, overrides: Record<string, unknown>) {
  return s.dataPlane.sites.create(siteInput(overrides), SYSTEM);
}

async function logOf(s: TestServer, traceId: string): Promise<Record<string, unknown>> {
  const row = await s.dataPlane.accessLog.get(traceId);
  if (!row) throw new Error(`no access-log record for ${traceId}`);
  return JSON.parse(row.record);
}

Deno.test("a benign request streams to the upstream with forwarding headers and a trace id", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, { upstreams: [up.url] });
  const r = await hostFetch(`${s.dataUrl}/hello/world?x=1&x=2`, "shop.test", {
    headers: { "x-forwarded-for": "6.6.6.6", connection: "keep-alive, x-hop", "x-hop": "1" },
  });
  assertEquals(r.status, 200);
  const trace = r.headers.get("x-waf-trace-id") ?? "";
  assertMatch(trace, HEX32);
  assertEquals(r.headers.get("x-upstream"), "upstream");
  assertEquals(r.headers.has("keep-alive"), false);
  const echo = await r.json();
  assertEquals(echo.path, "/hello/world");
  assertEquals(echo.query, "?x=1&x=2");
  assertEquals(echo.headers["host"], "shop.test");
  assertEquals(echo.headers["x-forwarded-for"], "127.0.0.1");
  assertEquals(echo.headers["x-forwarded-proto"], "http");
  assertEquals(echo.headers["x-forwarded-host"], "shop.test");
  assertEquals(echo.headers["forwarded"], 'for=127.0.0.1;host="shop.test";proto=http');
  assertEquals(echo.headers["x-hop"], undefined);
  const rec = await logOf(s, trace);
  assertEquals(rec["action"], "pass");
  assertEquals(rec["status"], 200);
  assertEquals(rec["client_ip"], "127.0.0.1");
  assertEquals((rec["chain"] as Array<{ check: string }>).map((c) => c.check), [
    "site",
    "engine",
    "upstream",
  ]);
});

Deno.test("an attack gets the 403 block page with the trace id in page, header and log", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, { upstreams: [up.url] });
  const r = await hostFetch(`${s.dataUrl}${SQLI}`, "shop.test");
  assertEquals(r.status, 403);
  assertEquals(r.headers.get("cache-control"), "no-store");
  const trace = r.headers.get("x-waf-trace-id") ?? "";
  assertMatch(trace, HEX32);
  const page = await r.text();
  ok(page.includes(trace));
  ok(!/sqli|tautology|inject/i.test(page), "the page reveals no detector internals");
  assertEquals(up.seen.length, 0);
  const rec = await logOf(s, trace);
  assertEquals(rec["action"], "block");
  const chain = rec["chain"] as Array<{ check: string; result: string; rule?: string }>;
  assertEquals(chain.at(-1)?.check, "engine");
  assertEquals(chain.at(-1)?.result, "block");
  assertEquals((rec["finding"] as { class: string }).class, "sqli");
  assertEquals((rec["finding"] as { location: string }).location, "query:id");

  const j = await hostFetch(`${s.dataUrl}${SQLI}`, "shop.test", {
    headers: { accept: "application/json" },
  });
  assertEquals(j.status, 403);
  const body = await j.json();
  assertEquals(body.code, "BLOCKED");
  assertEquals(body.traceId, j.headers.get("x-waf-trace-id"));
});

Deno.test("monitor mode passes an attack and logs it as log; off mode skips the engine", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  const site = addSite(s, { upstreams: [up.url], mode: "monitor" });
  const r = await hostFetch(`${s.dataUrl}${SQLI}`, "shop.test");
  assertEquals(r.status, 200);
  await r.body?.cancel();
  const rec = await logOf(s, r.headers.get("x-waf-trace-id")!);
  assertEquals(rec["action"], "log");
  assertEquals((rec["finding"] as { class: string }).class, "sqli");

  s.dataPlane.sites.update(site.id, siteInput({ upstreams: [up.url], mode: "off" }), SYSTEM);
  const off = await hostFetch(`${s.dataUrl}${SQLI}`, "shop.test");
  assertEquals(off.status, 200);
  await off.body?.cancel();
  const offRec = await logOf(s, off.headers.get("x-waf-trace-id")!);
  assertEquals(offRec["action"], "pass");
  const engine = (offRec["chain"] as Array<{ check: string; result: string }>)[1];
  assertEquals(engine, { check: "engine", result: "off", us: engine?.["us" as "check"] });
});

Deno.test("an attack in a JSON body is blocked and a benign body reaches the upstream whole", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, { upstreams: [up.url] });
  const attack = await hostFetch(`${s.dataUrl}/api`, "shop.test", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ comment: "<script>alert(document.cookie)</script>" }),
  });
  assertEquals(attack.status, 403);
  await attack.body?.cancel();
  const text = "I will select the union of these two sets and drop the rest. " +
    "x".repeat(100_000);
  const ok1 = await hostFetch(`${s.dataUrl}/api`, "shop.test", {
    method: "POST",
    headers: { "content-type": "text/plain" },
    body: text,
  });
  assertEquals(ok1.status, 200);
  const echo = await ok1.json();
  assertEquals(echo.bodyLength, text.length);
});

Deno.test("a body over the site limit gets 413 by Content-Length and by counting a chunked stream", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, { upstreams: [up.url], max_body_bytes: 4096, inspect_body_bytes: 1024 });
  const declared = await hostFetch(`${s.dataUrl}/upload`, "shop.test", {
    method: "POST",
    body: new Uint8Array(5000),
  });
  assertEquals(declared.status, 413);
  assertMatch(declared.headers.get("x-waf-trace-id") ?? "", HEX32);
  await declared.body?.cancel();

  let sent = 0;
  const chunked = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= 8 * 1024 * 1024) return controller.close();
      sent += 16_384;
      controller.enqueue(new Uint8Array(16_384).fill(120));
    },
  });
  const streamed = await hostFetch(`${s.dataUrl}/upload`, "shop.test", {
    method: "POST",
    body: chunked,
  });
  assertEquals(streamed.status, 413);
  await streamed.body?.cancel();
  // Socket buffers absorb some data after the proxy stops reading, but not the whole body.
  ok(sent < 8 * 1024 * 1024, `the proxy stopped reading early (client sent ${sent} bytes)`);
  const within = await hostFetch(`${s.dataUrl}/upload`, "shop.test", {
    method: "POST",
    body: new Uint8Array(4096),
  });
  assertEquals(within.status, 200);
  assertEquals((await within.json()).bodyLength, 4096);
});

Deno.test("a chunked body larger than the inspected prefix streams through whole", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, { upstreams: [up.url], max_body_bytes: 1_000_000, inspect_body_bytes: 1024 });
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= 200_000) return controller.close();
      sent += 10_000;
      controller.enqueue(new Uint8Array(10_000).fill(97));
    },
  });
  const r = await hostFetch(`${s.dataUrl}/upload`, "shop.test", { method: "POST", body });
  assertEquals(r.status, 200);
  assertEquals((await r.json()).bodyLength, 200_000);
});

Deno.test("an unreachable upstream gives a 502 page and a slow one a 504 page, both with the trace id", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  // Port 9 on loopback: nothing listens, the connection is refused at once.
  addSite(s, { name: "dead", hosts: ["dead.test"], upstreams: ["http://127.0.0.1:9"] });
  addSite(s, { upstreams: [up.url], timeouts: { connect_ms: 1000, response_ms: 200 } });
  const dead = await hostFetch(`${s.dataUrl}/`, "dead.test");
  assertEquals(dead.status, 502);
  const trace = dead.headers.get("x-waf-trace-id") ?? "";
  ok((await dead.text()).includes(trace));
  assertEquals((await logOf(s, trace))["status"], 502);

  const slow = await hostFetch(`${s.dataUrl}/slow`, "shop.test", {
    headers: { accept: "application/json" },
  });
  assertEquals(slow.status, 504);
  const body = await slow.json();
  assertEquals(body.code, "UPSTREAM_TIMEOUT");
  assertEquals(body.traceId, slow.headers.get("x-waf-trace-id"));
  up.release();
});

Deno.test("an upstream failure's cause is in the record's chain: refused, closed without an answer, TLS to a plain HTTP server", async () => {
  // Accepts, reads the request and closes without a byte: the upstream closed the connection.
  const mute = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of mute) {
      await conn.read(new Uint8Array(4096)).catch(() => null);
      conn.close();
    }
  })();
  try {
    await using up = startUpstream();
    await using s = await startTestServer();
    const port = (mute.addr as Deno.NetAddr).port;
    addSite(s, { name: "dead", hosts: ["dead.test"], upstreams: ["http://127.0.0.1:9"] });
    addSite(s, { name: "mute", hosts: ["mute.test"], upstreams: [`http://127.0.0.1:${port}`] });
    addSite(s, {
      name: "plain",
      hosts: ["plain.test"],
      // A plain HTTP server answers the TLS client hello with a plain-text 400.
      upstreams: [up.url.replace("http://", "https://")],
    });
    for (
      const [host, cause] of [
        ["dead.test", "upstream.refused"],
        ["mute.test", "upstream.closed"],
        ["plain.test", "upstream.tls"],
      ]
    ) {
      const r = await hostFetch(`${s.dataUrl}/`, host!);
      assertEquals(r.status, 502, host);
      await r.body?.cancel();
      const chain = (await logOf(s, r.headers.get("x-waf-trace-id") ?? ""))["chain"] as {
        check: string;
        result: string;
        rule?: string;
      }[];
      const last = chain[chain.length - 1]!;
      assertEquals([last.check, last.result, last.rule], ["upstream", "unreachable", cause], host);
    }
  } finally {
    mute.close();
    await serving.catch(() => {});
  }
});

Deno.test("the response deadline stops at the headers: a slow body streams to the end", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, { upstreams: [up.url], timeouts: { connect_ms: 1000, response_ms: 150 } });
  const r = await hostFetch(`${s.dataUrl}/drip?chunks=4&gap=100`, "shop.test");
  assertEquals(r.status, 200);
  assertEquals(await r.text(), "chunk1;chunk2;chunk3;chunk4;");
});

Deno.test("requests alternate between upstreams and skip one that is down", async () => {
  await using a = startUpstream("a");
  await using b = startUpstream("b");
  await using s = await startTestServer();
  addSite(s, { upstreams: [a.url, b.url, "http://127.0.0.1:9"] });
  const names: string[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await hostFetch(`${s.dataUrl}/`, "shop.test");
    assertEquals(r.status, 200);
    names.push((await r.json()).upstream);
  }
  assertEquals(new Set(names), new Set(["a", "b"]));
});

Deno.test("the client address comes from X-Forwarded-For only when the peer is trusted, and goes upstream as X-Real-IP", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  const site = addSite(s, { upstreams: [up.url] });
  const spoof = await hostFetch(`${s.dataUrl}/`, "shop.test", {
    headers: { "x-forwarded-for": "203.0.113.9", "x-real-ip": "203.0.113.9" },
  });
  // X-Real-IP is the address the WAF decided on, the client's own copy replaced.
  assertEquals((await spoof.json()).headers["x-real-ip"], "127.0.0.1");
  assertEquals((await logOf(s, spoof.headers.get("x-waf-trace-id")!))["client_ip"], "127.0.0.1");

  s.dataPlane.sites.update(
    site.id,
    siteInput({ upstreams: [up.url], trusted_proxies: ["127.0.0.0/8"] }),
    SYSTEM,
  );
  const viaProxy = await hostFetch(`${s.dataUrl}/`, "shop.test", {
    headers: { "x-forwarded-for": "203.0.113.9" },
  });
  const echo = await viaProxy.json();
  assertEquals(echo.headers["x-forwarded-for"], "203.0.113.9, 127.0.0.1");
  assertEquals(echo.headers["x-real-ip"], "203.0.113.9");
  assertEquals(
    (await logOf(s, viaProxy.headers.get("x-waf-trace-id")!))["client_ip"],
    "203.0.113.9",
  );
});

Deno.test("a WebSocket upgrade passes through to the upstream and frames echo both ways", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, { hosts: ["127.0.0.1"], upstreams: [up.url] });
  const ws = new WebSocket(`${s.dataUrl.replace("http", "ws")}/ws`, ["chat"]);
  const opened = await new Promise<string>((resolve, reject) => {
    ws.onopen = () => resolve(ws.protocol);
    ws.onerror = () => reject(new Error("WebSocket failed"));
  });
  assertEquals(opened, "chat");
  const reply = new Promise<string>((resolve) => ws.onmessage = (e) => resolve(e.data));
  ws.send("hello");
  assertEquals(await reply, "echo:hello");
  const closed = new Promise<void>((resolve) => ws.onclose = () => resolve());
  ws.close();
  await closed;
});

Deno.test("a host without a site still gets the no-site page, logged with the trace id", async () => {
  await using s = await startTestServer();
  const r = await hostFetch(`${s.dataUrl}/`, "nobody.test");
  assertEquals(r.status, 404);
  const trace = r.headers.get("x-waf-trace-id")!;
  ok((await r.text()).includes(trace));
  const rec = await logOf(s, trace);
  assertEquals(rec["site_id"], null);
  assertEquals(rec["chain"], [{
    check: "site",
    result: "none",
    us: (rec["chain"] as Array<{ us: number }>)[0]!.us,
  }]);
});
