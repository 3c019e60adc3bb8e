/**
 * An HTTP/2 connection the connection front closes at a deadline says so first: RFC 9113 §6.8
 * ("endpoints SHOULD always send a GOAWAY frame before closing a connection"). Its last stream id
 * is the highest possible (what a close without GOAWAY means; a lower one aborts Deno's
 * node:http2 client holding a stream above it, see `Http2Framing.goaway`). The code: NO_ERROR for an idle connection (a graceful close), ENHANCE_YOUR_CALM (§7, §10.5) for a
 * stalled request body or an answer the client grants no room to (the front guards the server's
 * resources against a peer that holds them). Real server on port 0, raw sockets.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { addSite } from "../_helpers/protection.ts";
import { frame, getBlock, PREFACE, settings } from "../_helpers/h2_frames.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const enc = new TextEncoder();
const SHORT = { header_timeout: "1s", body_timeout: "1s", keepalive_timeout: "1s" };
const GOAWAY = 0x7;
const NO_ERROR = 0x0;
const ENHANCE_YOUR_CALM = 0xb;

/** Every GOAWAY frame read until the server closes: [last stream id, error code]. */
async function goawaysUntilClosed(conn: Deno.Conn): Promise<Array<[number, number]>> {
  const buf = new Uint8Array(65_536);
  let got = new Uint8Array();
  const out: Array<[number, number]> = [];
  // Only for a test that fails: a server that never closes.
  const timer = setTimeout(() => conn.close(), 10_000);
  try {
    for (;;) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      const more = new Uint8Array(got.length + n);
      more.set(got);
      more.set(buf.subarray(0, n), got.length);
      got = more;
    }
  } finally {
    clearTimeout(timer);
  }
  for (let at = 0; at + 9 <= got.length;) {
    const len = (got[at]! << 16) | (got[at + 1]! << 8) | got[at + 2]!;
    if (got[at + 3] === GOAWAY && at + 9 + len <= got.length) {
      const v = new DataView(got.buffer, at + 9, 8);
      out.push([v.getUint32(0) & 0x7fff_ffff, v.getUint32(4)]);
    }
    at += 9 + len;
  }
  return out;
}

Deno.test("the front sends GOAWAY before closing an HTTP/2 connection at its deadline", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const port = Number(new URL(s.dataUrl).port);
  // POST / to shop.test (END_HEADERS, no END_STREAM), its body never coming.
  const post = new Uint8Array([0x83, 0x86, 0x84, 0x41, 9, ...enc.encode("shop.test")]);
  const cases: Array<[string, Uint8Array, number, string]> = [
    [
      "an idle connection after its answer",
      new Uint8Array([...PREFACE, ...frame(0x4, 0, 0), ...frame(0x1, 0x5, 1, getBlock())]),
      NO_ERROR,
      "keepalive_timeout",
    ],
    [
      "a stalled request body",
      new Uint8Array([
        ...PREFACE,
        ...frame(0x4, 0, 0),
        ...frame(0x1, 0x5, 1, getBlock()),
        ...frame(0x1, 0x4, 3, post),
      ]),
      ENHANCE_YOUR_CALM,
      "body_timeout",
    ],
    [
      "an answer the client grants no room to",
      new Uint8Array([
        ...PREFACE,
        ...frame(0x4, 0, 0, settings([[0x4, 0]])),
        ...frame(0x1, 0x5, 1, getBlock(`/big?n=${64 * 1024}`)),
      ]),
      ENHANCE_YOUR_CALM,
      "send_timeout",
    ],
  ];
  for (const [what, bytes, code, reason] of cases) {
    const before = s.monitor.connections.listener("data").closed[reason as "body_timeout"];
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(bytes);
    const goaways = await goawaysUntilClosed(conn);
    assertEquals(goaways, [[0x7fff_ffff, code]], what);
    assertEquals(
      s.monitor.connections.listener("data").closed[reason as "body_timeout"],
      before + 1,
      what,
    );
  }
});
