/**
 * The data plane over its HTTP/1.1 upstream client, end to end: an upstream that breaks framing
 * gets a 502 page with the trace id (its response never reaches the client), hop-by-hop headers
 * are removed in both directions, and a streamed response passes through.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { hostFetch } from "../../_helpers/data_client.ts";
import { startRawUpstream } from "../../_helpers/raw_upstream.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";

const HEX32 = /^[0-9a-f]{32}$/;

Deno.test("a smuggling-shaped upstream response is a 502 with the trace id, never passed on", async () => {
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send(
      "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n" +
        "0\r\n\r\nHTTP/1.1 200 OK\r\nx-smuggled: 1\r\ncontent-length: 0\r\n\r\n",
    );
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const r = await hostFetch(`${s.dataUrl}/`, "shop.test");
  assertEquals(r.status, 502);
  assertEquals(r.headers.has("x-smuggled"), false);
  const trace = r.headers.get("x-waf-trace-id") ?? "";
  assertMatch(trace, HEX32);
  ok((await r.text()).includes(trace));
  const row = await s.dataPlane.accessLog.get(trace);
  const rec = JSON.parse(row!.record);
  assertEquals(rec.status, 502);
  assertEquals(rec.chain.at(-1), { ...rec.chain.at(-1), check: "upstream", result: "invalid" });
});

Deno.test("hop-by-hop headers (and those Connection names) are removed both ways", async () => {
  await using up = startRawUpstream(async (peer) => {
    for (;;) {
      const req = await peer.readRequest();
      if (req === null) return;
      const seen = ["x-client-hop", "te", "upgrade", "keep-alive", "x-kept"]
        .filter((h) => new RegExp(`\r\n${h}:`, "i").test(req)).join(",");
      await peer.send(
        "HTTP/1.1 200 OK\r\nconnection: keep-alive, x-server-hop\r\nx-server-hop: 1\r\n" +
          "keep-alive: timeout=5\r\nproxy-authenticate: Basic\r\nx-kept: yes\r\n" +
          `x-seen: ${seen}\r\ntransfer-encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n`,
      );
    }
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const r = await hostFetch(`${s.dataUrl}/`, "shop.test", {
    headers: { connection: "x-client-hop", "x-client-hop": "1", te: "trailers", "x-kept": "1" },
  });
  assertEquals(r.status, 200);
  assertEquals(r.headers.get("x-seen"), "x-kept");
  assertEquals(r.headers.get("x-kept"), "yes");
  for (const h of ["x-server-hop", "keep-alive", "proxy-authenticate"]) {
    assertEquals(r.headers.has(h), false, h);
  }
  assertEquals(await r.text(), "body");
});

const BROKEN: Array<[string, string]> = [
  ["malformed-status", "HTTP/1.1 2OO OK\r\ncontent-length: 2\r\n\r\nok"],
  [
    "bad-chunk-size",
    "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhi\r\n0\r\n\r\n",
  ],
  [
    "duplicate-length",
    "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\nx-leak: 1\r\n\r\nok!",
  ],
  ["garbage", "SSH-2.0-OpenSSH_9.6\r\n\r\n"],
];

Deno.test("a malformed status, a bad chunk size, differing lengths or garbage are 502s with the trace id", async () => {
  await using up = startRawUpstream(async (peer) => {
    const req = await peer.readRequest();
    const path = /^GET \/(\S+)/.exec(req ?? "")?.[1];
    await peer.send(BROKEN.find(([name]) => name === path)?.[1] ?? "HTTP/1.1 500 x\r\n\r\n");
  });
  await using s = await startTestServer();
  for (const [name] of BROKEN) {
    s.dataPlane.sites.create(
      siteInput({ name, hosts: [`${name}.test`], upstreams: [up.url] }),
      SYSTEM,
    );
  }
  for (const [name] of BROKEN) {
    const r = await hostFetch(`${s.dataUrl}/${name}`, `${name}.test`);
    assertEquals(r.status, 502, name);
    assertEquals(r.headers.has("x-leak"), false, name);
    const trace = r.headers.get("x-waf-trace-id") ?? "";
    assertMatch(trace, HEX32);
    const page = await r.text();
    ok(page.includes(trace), name);
    ok(!page.includes("SSH-2.0") && !page.includes("ok!"), name);
    const rec = JSON.parse((await s.dataPlane.accessLog.get(trace))!.record);
    assertEquals([rec.status, rec.chain.at(-1).result], [502, "invalid"], name);
  }
});

Deno.test("a client that goes away mid-body gets the upstream connection closed, not pooled", async () => {
  let closed: () => void;
  const sawClose = new Promise<void>((r) => closed = r);
  await using up = startRawUpstream(async (peer) => {
    await peer.readRequest();
    await peer.send(
      "HTTP/1.1 200 OK\r\ncontent-length: 10000000\r\n\r\n",
      new Uint8Array(256 * 1024).fill(97),
    );
    // Nothing more is sent: the proxy must close this connection once its client is gone.
    assertEquals(await peer.readRequest(), null);
    closed();
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const ac = new AbortController();
  const r = await hostFetch(`${s.dataUrl}/big`, "shop.test", { signal: ac.signal });
  assertEquals(r.status, 200);
  const reader = r.body!.getReader();
  await reader.read();
  ac.abort();
  await reader.cancel().catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const gaveUp = new Promise<string>((r) => timer = setTimeout(() => r("still open"), 5_000));
  assertEquals(await Promise.race([sawClose.then(() => "closed"), gaveUp]), "closed");
  clearTimeout(timer);
  assertEquals(up.connections, 1);
});
