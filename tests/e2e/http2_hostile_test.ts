/**
 * Hostile HTTP/2 clients against the connection front's frame follower (net/h2_framing.ts):
 * bytes that would make the follower believe something the server behind does not (a request
 * open, a window with room) must not hold a connection past the listener's deadlines. Real
 * servers on port 0, raw sockets.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite } from "../_helpers/protection.ts";
import { frame, getBlock, PREFACE, settings } from "../_helpers/h2_frames.ts";
import { closedAfter } from "../_helpers/raw_socket.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const enc = new TextEncoder();

const SHORT = { header_timeout: "1s", body_timeout: "1s", keepalive_timeout: "1s" };

const portOf = (url: string) => Number(new URL(url).port);

Deno.test("a PRI request that is not the HTTP/2 preface does not make the front follow its body as frames", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { limits: SHORT }, management: { limits: SHORT } } },
  });
  addSite(s, up.url, { mode: "off" });
  for (const url of [s.dataUrl, s.managementUrl]) {
    // An HTTP/1.1 request with the method PRI whose body looks like the rest of a preface and a
    // complete HEADERS frame: a follower that took it for HTTP/2 would see a request open and
    // apply no deadline while the server waits for the next HTTP/1.1 request.
    const body = new Uint8Array([...enc.encode("SM\r\n\r\n"), ...frame(0x1, 0x5, 1, getBlock())]);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(url) });
    const t0 = performance.now();
    await conn.write(
      new Uint8Array([
        ...enc.encode(
          `PRI /x HTTP/1.1\r\nhost: shop.test\r\ncontent-length: ${body.length}\r\n\r\n`,
        ),
        ...body,
      ]),
    );
    const ms = await closedAfter(conn, t0);
    ok(ms < 3_000, `${url}: closed after ${Math.round(ms)} ms (deadlines 1 s)`);
  }
});

Deno.test("a SETTINGS frame longer than the follower keeps cannot hide the client's window from it", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  // 700 entries: the window a follower that reads only the first 4 KiB would take, then 0 (what
  // the server applies: it can send nothing on a new stream).
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < 700; i++) pairs.push([0x4, 65_535]);
  pairs.push([0x4, 0]);
  const t0 = performance.now();
  await conn.write(
    new Uint8Array([
      ...PREFACE,
      ...frame(0x4, 0, 0, settings(pairs)),
      ...frame(0x1, 0x5, 1, getBlock(`/big?n=${1024 * 1024}`)),
    ]),
  );
  const ms = await closedAfter(conn, t0);
  ok(ms < 4_000, `closed after ${Math.round(ms)} ms (send deadline 1 s)`);
  assertEquals(s.monitor.connections.listener("data").closed.send_timeout, 1);
});

Deno.test("empty and padding-only DATA frames do not hold an HTTP/2 request body's deadline off", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  // POST / to shop.test, its body never coming: only frames that carry no data, every 300 ms.
  const post = new Uint8Array([0x83, 0x86, 0x84, 0x41, 9, ...enc.encode("shop.test")]);
  const padding = new Uint8Array(101);
  padding[0] = 100;
  for (const [i, empty] of [frame(0x0, 0, 1), frame(0x0, 0x8, 1, padding)].entries()) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
    const t0 = performance.now();
    await conn.write(
      new Uint8Array([...PREFACE, ...frame(0x4, 0, 0), ...frame(0x1, 0x4, 1, post)]),
    );
    const writing = (async () => {
      for (let n = 0; n < 30; n++) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        if (await conn.write(empty).catch(() => null) === null) return;
      }
    })();
    const ms = await closedAfter(conn, t0);
    await writing;
    ok(ms < 3_000, `${i === 0 ? "empty" : "padding only"}: closed after ${Math.round(ms)} ms`);
    assertEquals(s.monitor.connections.listener("data").closed.body_timeout, i + 1);
  }
});

/** Reads frames off `conn` until `until` says stop; null if the connection ends first. */
async function readFrames(
  conn: Deno.Conn,
  until: (type: number, flags: number, stream: number) => boolean,
): Promise<boolean> {
  const buf = new Uint8Array(65_536);
  let got = new Uint8Array();
  let at = 0;
  while (true) {
    while (at + 9 <= got.length) {
      const len = (got[at]! << 16) | (got[at + 1]! << 8) | got[at + 2]!;
      if (at + 9 + len > got.length) break;
      const stream = new DataView(got.buffer, at + 5, 4).getUint32(0);
      if (until(got[at + 3]!, got[at + 4]!, stream)) return true;
      at += 9 + len;
    }
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return false;
    const more = new Uint8Array(got.length + n);
    more.set(got);
    more.set(buf.subarray(0, n), got.length);
    got = more;
  }
}

Deno.test("a client that grants no room until the answer's headers come is not cut while the upstream thinks", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  // SETTINGS_INITIAL_WINDOW_SIZE 0: nothing of an answer's body may come before a WINDOW_UPDATE.
  await conn.write(
    new Uint8Array([
      ...PREFACE,
      ...frame(0x4, 0, 0, settings([[0x4, 0]])),
      ...frame(0x1, 0x5, 1, getBlock("/slow")),
    ]),
  );
  await up.held();
  // The upstream thinks for 2.5 s (more than every deadline): the server has nothing to send.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  up.release();
  ok(await readFrames(conn, (type, _, stream) => type === 0x1 && stream === 1), "closed early");
  const grant = new Uint8Array(4);
  new DataView(grant.buffer).setUint32(0, 65_535);
  await conn.write(frame(0x8, 0, 1, grant));
  ok(
    await readFrames(
      conn,
      (type, flags, stream) => type === 0x0 && (flags & 1) === 1 && stream === 1,
    ),
    "closed before the answer's end",
  );
  conn.close();
  assertEquals(s.monitor.connections.listener("data").closed.send_timeout, 0);
});

Deno.test("frames the server refuses cannot hold an HTTP/2 connection past its deadlines", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const u32 = (n: number) => {
    const out = new Uint8Array(4);
    new DataView(out.buffer).setUint32(0, n);
    return out;
  };
  const get = (stream: number, path = "/slow") => frame(0x1, 0x5, stream, getBlock(path));
  const huge = new Uint8Array([0xff, 0xff, 0xff, 0x0, 0x0, 0, 0, 0, 1]);
  // Each after the preface and SETTINGS; the upstream holds `/slow` until the end of the test,
  // so a request the follower took for open and the server did not would hold its connection.
  const cases: Array<[string, Uint8Array[]]> = [
    ["a length past SETTINGS_MAX_FRAME_SIZE", [frame(0x1, 0x4, 1, getBlock()), huge]],
    ["CONTINUATION on another stream", [frame(0x1, 0x1, 1, getBlock()), frame(0x9, 0x4, 3)]],
    ["CONTINUATION without HEADERS", [frame(0x9, 0x4, 1, getBlock())]],
    ["HEADERS on an even stream", [get(2)]],
    ["HEADERS on a decreasing stream", [get(5, "/"), get(3)]],
    ["HEADERS on a reused stream", [get(1, "/"), get(1)]],
    ["PUSH_PROMISE from the client", [get(1), frame(0x5, 0x4, 1, new Uint8Array([0, 0, 0, 2]))]],
    ["RST_STREAM of a stream never opened", [frame(0x3, 0, 7, u32(0))]],
    ["WINDOW_UPDATE of 0 on the connection", [get(1), frame(0x8, 0, 0, u32(0))]],
    ["WINDOW_UPDATE past 2^31-1 on the connection", [get(1), frame(0x8, 0, 0, u32(0x7fffffff))]],
    ["WINDOW_UPDATE of 0 on a stream", [get(1, "/"), frame(0x8, 0, 1, u32(0))]],
    ["WINDOW_UPDATE past 2^31-1 on a stream", [get(1, "/"), frame(0x8, 0, 1, u32(0x7fffffff))]],
    ["a request without its pseudo-headers", [frame(0x1, 0x5, 1, new Uint8Array([0x82]))]],
    ["a bad HPACK block", [frame(0x1, 0x5, 1, new Uint8Array([0xff, 0xff, 0xff, 0x7f]))]],
    ["the client's GOAWAY, then a request", [frame(0x7, 0, 0, new Uint8Array(8)), get(1, "/")]],
  ];
  for (const [name, frames] of cases) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
    const t0 = performance.now();
    await conn.write(
      new Uint8Array([...PREFACE, ...frame(0x4, 0, 0), ...frames.flatMap((f) => [...f])]),
    );
    const ms = await closedAfter(conn, t0, 5_000);
    ok(ms < 3_000, `${name}: closed after ${Math.round(ms)} ms (deadlines 1 s)`);
  }
  up.release();
});

Deno.test("Upgrade: h2c is answered as HTTP/1.1 and keeps the HTTP/1.1 keep-alive deadline", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  await conn.write(enc.encode(
    "GET / HTTP/1.1\r\nHost: shop.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n" +
      "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
  ));
  const buf = new Uint8Array(4096);
  const n = await conn.read(buf);
  ok(n !== null && new TextDecoder().decode(buf.subarray(0, 12)) === "HTTP/1.1 200", "answered");
  const ms = await closedAfter(conn, performance.now());
  ok(ms < 3_000, `closed after ${Math.round(ms)} ms (keep-alive deadline 1 s)`);
  assertEquals(up.seen.at(-1)?.headers.upgrade, undefined);
});
