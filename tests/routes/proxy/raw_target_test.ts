/**
 * A request target with raw UTF-8 bytes reaches the upstream as those bytes, not re-encoded as
 * `%xx` (the engine inspects the decoded form either way): the own HTTP/1.1 server (origin and
 * absolute form), an upgrade the own server hands to `Deno.serve`, and HTTP/2 (prior knowledge).
 * The upstream is a raw socket reading the request line as UTF-8.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { AnswerReader, bytes } from "../../_helpers/raw_socket.ts";
import { frame, getBlock, PREFACE, settings } from "../../_helpers/h2_frames.ts";
import { startRawUpstream } from "../../_helpers/raw_upstream.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";

Deno.test("raw UTF-8 in a request target reaches the upstream as the client's bytes", async () => {
  await using up = startRawUpstream(async (peer) => {
    for (;;) {
      if (await peer.readRequest() === null) return;
      await peer.send("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    }
  });
  await using s = await startTestServer();
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const port = Number(new URL(s.dataUrl).port);
  const heads = [
    "GET /caf\u00e9/\u4e2d?q=\u00e9 HTTP/1.1\r\nhost: shop.test\r\n\r\n",
    "GET http://shop.test/abs/caf\u00e9 HTTP/1.1\r\nhost: shop.test\r\n\r\n",
    "GET /up/caf\u00e9 HTTP/1.1\r\nhost: shop.test\r\nconnection: upgrade\r\nupgrade: foo\r\n\r\n",
  ];
  for (const head of heads) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      await conn.write(bytes(head));
      assertEquals((await new AnswerReader(conn).next())?.status, 200, head);
    } finally {
      conn.close();
    }
  }
  // HTTP/2 with prior knowledge: the :path literal carries the UTF-8 bytes.
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(PREFACE);
    await conn.write(frame(0x4, 0, 0, settings([])));
    await conn.write(frame(0x1, 0x5, 1, getBlock("/h2/caf\u00e9?q=\u00e9")));
    const buf = new Uint8Array(4096);
    // Read until the answer's DATA with END_STREAM (the upstream has the request by then).
    for (let got = new Uint8Array();;) {
      const n = await conn.read(buf);
      if (n === null) break;
      got = new Uint8Array([...got, ...buf.subarray(0, n)]);
      let at = 0;
      let ended = false;
      while (at + 9 <= got.length) {
        const len = (got[at]! << 16) | (got[at + 1]! << 8) | got[at + 2]!;
        if (got[at + 3] === 0x0 && got[at + 4]! & 0x1) ended = true;
        at += 9 + len;
      }
      if (ended) break;
    }
  } finally {
    conn.close();
  }
  assertEquals(up.requests.map((r) => r.slice(0, r.indexOf("\r\n"))), [
    "GET /caf\u00e9/\u4e2d?q=\u00e9 HTTP/1.1",
    "GET /abs/caf\u00e9 HTTP/1.1",
    "GET /up/caf\u00e9 HTTP/1.1",
    "GET /h2/caf\u00e9?q=\u00e9 HTTP/1.1",
  ]);
});
