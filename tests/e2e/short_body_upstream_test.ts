/**
 * A client that declares a Content-Length and then sends less and stalls, through the whole data
 * plane to a raw upstream: a small body (gathered before the upstream request) never reaches the
 * upstream at all; a larger one (streamed) may reach it partly, but that upstream connection is
 * closed and never carries another request (its missing bytes would be read from the next one).
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite } from "../_helpers/protection.ts";
import { closedAfter } from "../_helpers/raw_socket.ts";
import { startRawUpstream } from "../_helpers/raw_upstream.ts";
import { startTestServer } from "../_helpers/server.ts";

const enc = new TextEncoder();
const latin1 = new TextDecoder("latin1");

async function get(port: number, path: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    enc.encode(`GET ${path} HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\n\r\n`),
  );
  let text = "";
  const buf = new Uint8Array(4096);
  for (;;) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) break;
    text += latin1.decode(buf.subarray(0, n));
  }
  conn.close();
  return text;
}

Deno.test("a body shorter than its Content-Length, then silence: nothing of a small one goes upstream; a streamed one's upstream connection is closed, never reused", async () => {
  // Records each connection's bytes and whether it ended; answers every whole request 200.
  await using up = startRawUpstream(async (peer) => {
    while ((await peer.readRequest()) !== null) {
      await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    }
  });
  await using s = await startTestServer({
    config: { server: { data: { limits: { body_timeout: "1s" } } } },
  });
  // Only 16 bytes are inspected, so both bodies stream past the inspection: the 100-byte one is
  // gathered by the upstream client, the 40,000-byte one streams to the upstream as it comes.
  addSite(s, up.url, { mode: "off", inspect_body_bytes: 16 });
  const port = Number(new URL(s.dataUrl).port);
  // A first GET leaves a pooled upstream connection for the POSTs to take.
  ok((await get(port, "/warm")).startsWith("HTTP/1.1 200"));
  for (const [declared, sent] of [[100, 50], [40_000, 30_000]] as const) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    const t0 = performance.now();
    await conn.write(enc.encode(
      `POST /short-${declared} HTTP/1.1\r\nHost: shop.test\r\nContent-Length: ${declared}\r\n\r\n` +
        "a".repeat(sent),
    ));
    const ms = await closedAfter(conn, t0);
    ok(ms < 5_000, `the client connection closed after ${Math.round(ms)} ms`);
  }
  // Later requests each reach the upstream whole, on connections that carried no partial body.
  for (let i = 0; i < 3; i++) ok((await get(port, `/after-${i}`)).startsWith("HTTP/1.1 200"));
  const all = up.received.join("");
  ok(!all.includes("POST /short-100 "), "the small short body never went upstream");
  const streamed = [...up.received.keys()].filter((i) =>
    up.received[i]!.includes("POST /short-40000 ")
  );
  assertEquals(streamed.length, 1, "the streamed body reached the upstream in part");
  for (const i of streamed) {
    ok(up.ended[i], "the connection with the partial body was closed");
    ok(!/GET \/after-/.test(up.received[i]!), "and carried no later request");
  }
  for (let i = 0; i < 3; i++) ok(all.includes(`GET /after-${i} HTTP/1.1\r\n`), `after-${i}`);
});
