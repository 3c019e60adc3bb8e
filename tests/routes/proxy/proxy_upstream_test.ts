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
