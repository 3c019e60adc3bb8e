/**
 * The connection limits on HTTP/2 connections (prior knowledge on the plain listeners, ALPN `h2`
 * behind TLS): the front follows their frames (net/h2_framing.ts), so a connection that sends
 * the preface and no request, a header block that never ends, or a connection left with no
 * request open is closed at its deadline and counted; active requests and long answers are not.
 * Real servers on port 0, raw sockets and `node:http2`.
 */
import http2 from "node:http2";
import { once } from "node:events";
import tls from "node:tls";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite } from "../_helpers/protection.ts";
import { frame, getBlock, PREFACE } from "../_helpers/h2_frames.ts";
import { closedAfter } from "../_helpers/raw_socket.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";
import { CLOSE_REASONS } from "../../mod/core/connection_stats.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const SHORT = { header_timeout: "1s", body_timeout: "1s", keepalive_timeout: "1s" };

const NONE_CLOSED = Object.fromEntries(CLOSE_REASONS.map((reason) => [reason, 0]));

const SETTINGS = frame(0x4, 0, 0);
const PING = frame(0x6, 0, 0, new Uint8Array(8));

function portOf(url: string): number {
  return Number(new URL(url).port);
}

function counter(s: TestServer, listener: string) {
  return s.monitor.connections.listener(listener);
}

/** Writes `chunk` every `gap` ms until the connection refuses it (or `times` writes). */
async function keepWriting(conn: Deno.Conn, chunk: Uint8Array, gap: number, times = 50) {
  for (let i = 0; i < times; i++) {
    await sleep(gap);
    if (await conn.write(chunk).catch(() => null) === null) return;
  }
}

/** Writes `block` a byte every `gap` ms until the connection refuses it (or 50 bytes). */
async function trickleBytes(conn: Deno.Conn, block: Uint8Array, gap: number) {
  for (let i = 0; i < 50; i++) {
    await sleep(gap);
    if (await conn.write(block.subarray(i, i + 1)).catch(() => null) === null) return;
  }
}

/**
 * Resolves when the session closes, with the time since `since`; a session the server never
 * closes is destroyed after `limitMs` (and the time says so) instead of hanging the test.
 */
function sessionClosed(
  session: http2.ClientHttp2Session,
  since: number,
  limitMs = 30_000,
): Promise<number> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => session.destroy(), limitMs);
    session.on("close", () => {
      clearTimeout(timer);
      resolve(performance.now() - since);
    });
    session.on("error", () => {});
  });
}

/** One request on `session`: its status and body. */
function request(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: (stream: http2.ClientHttp2Stream) => Promise<void>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let text = "";
    stream.on("response", (h) => status = Number(h[":status"]));
    stream.on("data", (d: Uint8Array) => text += new TextDecoder().decode(d));
    stream.on("end", () => resolve({ status, body: text }));
    stream.on("error", reject);
    body?.(stream).catch(reject);
  });
}

Deno.test("an HTTP/2 connection that sends the preface and no request is closed at the header deadline and counted", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { limits: SHORT }, management: { limits: SHORT } } },
  });
  addSite(s, up.url);
  for (const listener of ["data", "management"] as const) {
    const url = listener === "data" ? s.dataUrl : s.managementUrl;
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(url) });
    const t0 = performance.now();
    await conn.write(PREFACE);
    const ms = await closedAfter(conn, t0);
    ok(ms >= 900 && ms < 3_000, `${listener}: closed after ${Math.round(ms)} ms (deadline 1 s)`);
    assertEquals(counter(s, listener).closed.header_timeout, 1);
  }
  // SETTINGS and PINGs every 200 ms are not a request: the deadline still holds.
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  const t0 = performance.now();
  await conn.write(new Uint8Array([...PREFACE, ...SETTINGS]));
  const pinging = keepWriting(conn, PING, 200);
  const ms = await closedAfter(conn, t0);
  await pinging;
  ok(ms >= 900 && ms < 3_000, `pinging: closed after ${Math.round(ms)} ms (deadline 1 s)`);
  assertEquals(counter(s, "data").closed.header_timeout, 2);
});

Deno.test("an HTTP/2 header block that trickles in is cut at the header deadline, however slowly it comes", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url);
  const port = portOf(s.dataUrl);
  // The first request: a HEADERS frame announcing 200 bytes, its payload sent a byte every 200 ms.
  const block = new Uint8Array(200);
  block.set(getBlock());
  const header = frame(0x1, 0x5, 1, block).subarray(0, 9);
  const first = await Deno.connect({ hostname: "127.0.0.1", port });
  const t0 = performance.now();
  await first.write(new Uint8Array([...PREFACE, ...SETTINGS, ...header]));
  const trickle = trickleBytes(first, block, 200);
  const ms = await closedAfter(first, t0);
  await trickle;
  ok(ms >= 900 && ms < 3_000, `closed after ${Math.round(ms)} ms (deadline 1 s)`);
  assertEquals(counter(s, "data").closed.header_timeout, 1);
});

Deno.test("a raw HTTP/2 request is answered, and the connection is closed at the keep-alive deadline after it", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  await conn.write(new Uint8Array([...PREFACE, ...SETTINGS, ...frame(0x1, 0x5, 1, getBlock())]));
  // The answer's DATA with END_STREAM on stream 1 arrives, then nothing until the close.
  const buf = new Uint8Array(65536);
  let got = new Uint8Array();
  const ended = () => {
    for (let i = 0; i + 9 <= got.length;) {
      const len = (got[i]! << 16) | (got[i + 1]! << 8) | got[i + 2]!;
      const stream = new DataView(got.buffer, got.byteOffset + i + 5, 4).getUint32(0);
      if ((got[i + 3] === 0 || got[i + 3] === 1) && got[i + 4]! & 1 && stream === 1) return true;
      i += 9 + len;
    }
    return false;
  };
  while (!ended()) {
    const n = await conn.read(buf);
    ok(n !== null, "closed before the answer");
    got = new Uint8Array([...got, ...buf.subarray(0, n)]);
  }
  const ms = await closedAfter(conn, performance.now());
  ok(ms < 3_000, `closed ${Math.round(ms)} ms after the answer (keep-alive deadline 1 s)`);
  assertEquals(counter(s, "data").closed.keepalive_timeout, 1);
  assertEquals(counter(s, "data").closed.header_timeout, 0);
});

Deno.test("a later HTTP/2 header block that trickles in is cut at the header deadline, not kept alive by its bytes", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const session = http2.connect(s.dataUrl);
  const closed = sessionClosed(session, performance.now());
  assertEquals((await request(session, { ":path": "/first", host: "shop.test" })).status, 200);
  // A second request on a raw connection after a first one: its HEADERS frame announces 200
  // bytes, sent a byte every 200 ms.
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: portOf(s.dataUrl) });
  await conn.write(new Uint8Array([...PREFACE, ...SETTINGS, ...frame(0x1, 0x5, 1, getBlock())]));
  const block = new Uint8Array(200);
  block.set(getBlock());
  await conn.write(frame(0x1, 0x5, 3, block).subarray(0, 9));
  const t0 = performance.now();
  const trickle = trickleBytes(conn, block, 200);
  const ms = await closedAfter(conn, t0);
  await trickle;
  ok(ms < 3_000, `closed after ${Math.round(ms)} ms (deadline 1 s)`);
  assertEquals(counter(s, "data").closed.header_timeout, 1);
  // The client session, idle meanwhile, went at its keep-alive deadline.
  await closed;
  assertEquals(counter(s, "data").closed.keepalive_timeout, 1);
  session.destroy();
});

Deno.test("a real HTTP/2 client's slow upload, long streamed answer and spaced requests are not cut; idle, it is closed", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const session = http2.connect(s.dataUrl);
  const closed = sessionClosed(session, performance.now());
  // A body sent in pieces 400 ms apart over 2.4 s (longer than every deadline).
  const upload = await request(
    session,
    { ":method": "POST", ":path": "/upload", host: "shop.test" },
    async (stream) => {
      for (const ch of "abcdef") {
        await sleep(400);
        stream.write(ch);
      }
      stream.end();
    },
  );
  assertEquals(upload.status, 200);
  assertEquals(JSON.parse(upload.body).body, "abcdef");
  // An answer streamed over 2.5 s, while another request comes and goes beside it.
  const [drip, beside] = await Promise.all([
    request(session, { ":path": "/drip?chunks=6&gap=500", host: "shop.test" }),
    sleep(300).then(() => request(session, { ":path": "/beside", host: "shop.test" })),
  ]);
  assertEquals([drip.status, drip.body], [200, "chunk1;chunk2;chunk3;chunk4;chunk5;chunk6;"]);
  assertEquals(beside.status, 200);
  // Requests 500 ms apart: each gap is within the 1 s keep-alive deadline.
  for (let i = 0; i < 3; i++) {
    await sleep(500);
    assertEquals((await request(session, { ":path": `/k${i}`, host: "shop.test" })).status, 200);
  }
  assertEquals(counter(s, "data").closed.keepalive_timeout, 0);
  // Then idle (the client's own PINGs do not count): closed by the server.
  const idleFrom = performance.now();
  const pinging = setInterval(() => session.ping(() => {}), 200);
  try {
    await closed;
  } finally {
    clearInterval(pinging);
  }
  const ms = performance.now() - idleFrom;
  ok(ms < 3_000, `idle session closed after ${Math.round(ms)} ms (keep-alive deadline 1 s)`);
  assertEquals(counter(s, "data").closed.keepalive_timeout, 1);
  assertEquals(counter(s, "data").closed.header_timeout, 0);
  session.destroy();
});

Deno.test("an HTTP/2 request body that stops is cut at the body deadline and counted", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  const session = http2.connect(s.dataUrl);
  const closed = sessionClosed(session, performance.now());
  const stream = session.request(
    { ":method": "POST", ":path": "/upload", host: "shop.test", "content-length": "100" },
    { endStream: false },
  );
  stream.on("error", () => {});
  stream.write("first=part");
  // ...and then nothing more.
  const from = performance.now();
  await closed;
  const ms = performance.now() - from;
  ok(ms < 3_000, `closed after ${Math.round(ms)} ms (body deadline 1 s)`);
  assertEquals(counter(s, "data").closed.body_timeout, 1);
  assertEquals(counter(s, "data").closed.header_timeout, 0);
  session.destroy();
});

Deno.test("an HTTP/2 upload held back by flow control while the upstream does not read is not cut", async () => {
  const MIB = 1024 * 1024;
  let arrived!: () => void;
  const held = new Promise<void>((resolve) => arrived = resolve);
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  // An upstream that reads the body only when the test says so.
  await using sink = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      arrived();
      await released;
      return new Response(String((await req.arrayBuffer()).byteLength));
    },
  );
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, `http://127.0.0.1:${sink.addr.port}`, { mode: "off", max_body_bytes: 64 * MIB });
  const session = http2.connect(s.dataUrl);
  session.on("error", () => {});
  const size = 48 * MIB;
  let written = 0;
  const answer = request(
    session,
    { ":method": "POST", ":path": "/sink", host: "shop.test" },
    async (stream) => {
      // A piece at a time as the stream drains, as a streaming client uploads. All 48 MiB
      // written at once were copied in one go when the session connected (node:http2's writev
      // concatenates its queue), blocking for 0.4 to 2 s, under load, the event loop that the
      // WAF under test shares: the preface came after the 1 s header deadline and the
      // connection was closed (header_timeout) with no answer.
      const piece = new Uint8Array(MIB).fill(120);
      const writing = (async () => {
        for (; written < size; written += MIB) {
          if (!stream.write(piece)) await once(stream, "drain");
        }
        stream.end();
      })();
      await held;
      // Twice the body deadline with the client unable to send: the server's time, not the
      // client's.
      await sleep(2_500);
      ok(
        written < size && stream.bufferSize > 0,
        `the client was held back by flow control (${written / MIB} of 48 MiB taken)`,
      );
      release();
      await writing;
    },
  );
  // With the front's close reasons: a connection it closed says at which deadline.
  assertEquals(
    { answer: await answer, closed: counter(s, "data").closed },
    { answer: { status: 200, body: String(size) }, closed: NONE_CLOSED },
  );
  session.destroy();
});

Deno.test("an HTTP/2 answer the client grants no room to is cut at the send deadline; one it reads is not", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({ config: { server: { data: { limits: SHORT } } } });
  addSite(s, up.url, { mode: "off" });
  // Read as it comes, 16 MiB go through whatever the windows.
  const reader = http2.connect(s.dataUrl);
  reader.on("error", () => {});
  const big = await request(reader, { ":path": `/big?n=${16 * 1024 * 1024}`, host: "shop.test" });
  assertEquals([big.status, big.body.length], [200, 16 * 1024 * 1024]);
  reader.destroy();
  // Not read: the client's window runs out and it never grants more.
  const session = http2.connect(s.dataUrl);
  const closed = sessionClosed(session, performance.now());
  const stream = session.request({ ":path": `/big?n=${16 * 1024 * 1024}`, host: "shop.test" });
  stream.on("error", () => {});
  stream.pause();
  await new Promise((resolve) => stream.once("response", resolve));
  const from = performance.now();
  await closed;
  const ms = performance.now() - from;
  ok(ms < 4_000, `closed after ${Math.round(ms)} ms (send deadline 1 s)`);
  assertEquals(counter(s, "data").closed.send_timeout, 1);
  session.destroy();
});

Deno.test("behind TLS, an ALPN h2 connection has the same deadlines: preface only, then idle after a request", async () => {
  const now = Date.now();
  const ca = await createCa("waf test CA", now, systemRandom);
  const a = await createLeaf(ca, { commonName: "a.test", dnsNames: ["a.test"] }, now, systemRandom);
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { https_listen: "127.0.0.1:0", limits: SHORT } } },
  });
  const port = Number(new URL(s.dataHttpsUrl!).port);
  s.dataPlane.sites.create(
    siteInput({ name: "a", hosts: ["a.test"], upstreams: [up.url], tls: a }),
    SYSTEM,
  );
  // The preface and nothing more.
  const raw = await new Promise<{ alpn: string | false; ms: number }>((resolve, reject) => {
    const t0 = performance.now();
    const socket = tls.connect({
      host: "127.0.0.1",
      port,
      servername: "a.test",
      ca: ca.cert,
      ALPNProtocols: ["h2"],
    }, () => socket.write(new Uint8Array([...PREFACE, ...SETTINGS])));
    socket.on("data", () => {});
    socket.on(
      "close",
      () => resolve({ alpn: socket.alpnProtocol ?? false, ms: performance.now() - t0 }),
    );
    socket.on("error", reject);
  });
  assertEquals(raw.alpn, "h2");
  ok(raw.ms >= 900 && raw.ms < 3_000, `closed after ${Math.round(raw.ms)} ms (deadline 1 s)`);
  assertEquals(counter(s, "data").closed.header_timeout, 1);
  // A real client: a request answered, then the idle connection closed.
  const session = http2.connect(`https://127.0.0.1:${port}`, { servername: "a.test", ca: ca.cert });
  const closed = sessionClosed(session, performance.now());
  const answer = await request(session, { ":path": "/tls", ":authority": "a.test" });
  assertEquals(answer.status, 200);
  assertEquals(JSON.parse(answer.body).path, "/tls");
  const idleFrom = performance.now();
  await closed;
  const ms = performance.now() - idleFrom;
  ok(ms < 3_000, `idle session closed after ${Math.round(ms)} ms (keep-alive deadline 1 s)`);
  assertEquals(counter(s, "data").closed.keepalive_timeout, 1);
  session.destroy();
});

Deno.test("the management listener over TLS (ALPN h2) follows HTTP/2 the same way", async () => {
  await using s = await startTestServer({
    config: { server: { management: { tls: "auto", limits: SHORT } } },
  });
  const ca = await Deno.readTextFile(`${s.dir}/tls/ca.crt`);
  const session = http2.connect(s.managementUrl.replace("127.0.0.1", "localhost"), { ca });
  const closed = sessionClosed(session, performance.now());
  const live = await request(session, { ":path": "/health/live" });
  assertEquals([live.status, session.alpnProtocol], [200, "h2"]);
  const from = performance.now();
  await closed;
  const ms = performance.now() - from;
  ok(ms < 3_000, `idle session closed after ${Math.round(ms)} ms (keep-alive deadline 1 s)`);
  assertEquals(counter(s, "management").closed.keepalive_timeout, 1);
  session.destroy();
});
