/**
 * 200 realtime subscribers while the data plane serves attacks: every subscriber that reads gets
 * every blocked request, and stalled ones (raw sockets that never read) lose events into their
 * bounded queue, are counted, and are disconnected with a final `stream.closed` event, so what the
 * server holds for them stays bounded however long they stall.
 */
import { assertEquals, assertMatch } from "../_helpers/assert.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { ADMIN, call, completeSetup, login, type Session } from "../_helpers/identity.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const ATTACK = "/search?q=1%27%20union%20select%20password%20from%20users--";

async function attack(s: TestServer): Promise<void> {
  const r = await hostFetch(`${s.dataUrl}${ATTACK}`, "shop.test");
  assertEquals(r.status, 403);
  await r.body?.cancel();
}

/** Reads an SSE body, counting `access.blocked` frames, until `want` of them or the end. */
async function countBlocked(body: ReadableStream<Uint8Array>, want: number): Promise<number> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let seen = 0;
  let buffer = "";
  try {
    while (seen < want) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        if (buffer.slice(0, end).includes("event: access.blocked\n")) seen++;
        buffer = buffer.slice(end + 2);
      }
    }
  } finally {
    await reader.cancel();
  }
  return seen;
}

/** A subscriber that connects and never reads: the server's writes fill the socket buffers. */
async function stalled(s: TestServer, session: Session): Promise<Deno.TcpConn> {
  const port = Number(new URL(s.managementUrl).port);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(
      `GET /api/realtime/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nCookie: ${session.cookie}\r\nConnection: close\r\n\r\n`,
    ),
  );
  return conn;
}

/** The tail of what the socket gives until the goodbye event, the server's close, or `ms`. */
async function tail(conn: Deno.TcpConn, ms: number): Promise<string> {
  const decoder = new TextDecoder();
  const buf = new Uint8Array(1 << 16);
  let last = "";
  const deadline = Date.now() + ms;
  const timer = setTimeout(() => conn.close(), ms);
  try {
    while (Date.now() < deadline) {
      const n = await conn.read(buf);
      if (n === null) break;
      last = (last + decoder.decode(buf.subarray(0, n), { stream: true })).slice(-400);
      if (/event: stream\.closed\n.*\n\n/.test(last)) break;
    }
  } catch {
    // closed by the timer
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* already closed */ }
  }
  return last;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("200 realtime subscribers under data-plane load: readers get every event, stalled ones are dropped", async () => {
  const READERS = 195;
  const STALLED = 5;
  const ATTACKS = 100;
  await using up = startUpstream();
  // All 200 subscribers come from this one loopback address, past the management listener's
  // per-client connection cap (64 by default): connections that carry a feed do not count.
  await using s = await startTestServer();
  await completeSetup(s);
  s.dataPlane.sites.create(siteInput({ upstreams: [up.url] }), SYSTEM);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  const bus = s.monitor.bus;

  const readers: Promise<number>[] = [];
  for (let i = 0; i < READERS; i++) {
    const res = await call(s, "GET", "/api/realtime/events?kinds=access.blocked", {
      session: admin,
    });
    assertEquals(res.status, 200);
    readers.push(countBlocked(res.body!, ATTACKS));
  }
  const sockets = await Promise.all(Array.from({ length: STALLED }, () => stalled(s, admin)));
  for (let i = 0; i < 200 && (bus.stats().subscribers.sse ?? 0) < READERS + STALLED; i++) {
    await sleep(20);
  }
  assertEquals(bus.stats().subscribers.sse, READERS + STALLED);

  // The data plane serves attacks, 10 at a time, while large events fill the stalled sockets.
  const load = (async () => {
    let n = 0;
    for (let i = 0; i < ATTACKS; i += 10) {
      await Promise.all(Array.from({ length: 10 }, () => attack(s).then(() => n++)));
    }
    return n;
  })();
  const pad = "x".repeat(16_384);
  for (let batch = 0; batch < 400 && bus.stats().disconnected < STALLED; batch++) {
    for (let i = 0; i < 20; i++) bus.publish("config.changed", { pad });
    await sleep(5);
  }
  assertEquals(await load, ATTACKS);
  const stats = bus.stats();
  console.log(`dropped ${stats.dropped}, disconnected ${stats.disconnected}`);
  assertEquals(stats.disconnected, STALLED, "the stalled subscribers were disconnected");
  // Each stalled subscriber lost exactly the limit before it was cut off: its queue stayed bounded.
  assertEquals(stats.dropped, STALLED * 1024);
  const counts = await Promise.all(readers);
  assertEquals(counts, Array(READERS).fill(ATTACKS), "every reader got every blocked request");
  assertEquals(bus.stats().subscribers.sse ?? 0, 0);

  const metrics = await call(s, "GET", "/metrics", { session: admin });
  assertMatch(await metrics.text(), new RegExp(`^waf_realtime_disconnects_total ${STALLED}$`, "m"));
  // What a stalled socket still gets, once read, ends with the goodbye.
  for (const conn of sockets) {
    assertMatch(await tail(conn, 20_000), /event: stream\.closed\ndata: \{"reason":"too_slow"/);
  }
});
