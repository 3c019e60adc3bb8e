/**
 * The connection front under a flood, on fake time (issue #37, item 3): a body's minimum rate,
 * the descriptors each connection is charged, the management listener's own reserve, shedding
 * the connections that do least when the front is full, and deadlines that shrink as it fills.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { settlesWithin, stillPending, turn } from "../_helpers/fake_timers.ts";
import { planeBudget } from "../../net/descriptors.ts";
import { closed, cutBetween, startTestFront, status } from "./test_front.ts";

const enc = new TextEncoder();
const write = (conn: Deno.Conn, text: string) => conn.write(enc.encode(text));
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await turn();
};
/** Deadlines of a minute (the defaults' order), 500 bytes a second after 10 s. */
const MINUTE = {
  headerTimeoutMs: 60_000,
  bodyTimeoutMs: 60_000,
  keepAliveTimeoutMs: 60_000,
  bodyMinRate: 500,
  bodyMinRateAfterMs: 10_000,
};
/** The sweep's period with one-minute deadlines. */
const SWEEP_MINUTE = 1_000;
const UPLOAD = "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 100000\r\n\r\n";

/** A request handler that holds each request until the test lets it go. */
function heldHandler() {
  const waiting: Array<() => void> = [];
  return {
    handler: async (req: Request) => {
      await req.arrayBuffer();
      await new Promise<void>((resolve) => waiting.push(resolve));
      return new Response("own");
    },
    get held() {
      return waiting.length;
    },
    release() {
      for (const r of waiting.splice(0)) r();
    },
  };
}

Deno.test("flood: a body trickled at 1 byte every 20 s outlives body_timeout without a minimum rate", async () => {
  await using t = startTestFront({ limits: { ...MINUTE, bodyMinRate: 0 } });
  const conn = await t.connect();
  const done = closed(conn);
  await write(conn, `${UPLOAD}x`);
  // Each byte comes well within the minute-long pause body_timeout allows.
  for (let i = 0; i < 4; i++) {
    await t.timers.tick(20_000);
    await write(conn, "x");
    await turns();
  }
  ok(await stillPending(done), "the trickle holds the connection for 80 s");
  assertEquals(t.stats.closed.body_timeout, 0);
});

Deno.test("flood: a body trickled at 1 byte every 20 s is cut by the minimum rate after its first 10 s", async () => {
  await using t = startTestFront({ limits: MINUTE });
  const conn = await t.connect();
  const done = closed(conn);
  await write(conn, `${UPLOAD}x`);
  await turns();
  await cutBetween(t, done, [9_000, 1_000 + SWEEP_MINUTE], "body_rate");
  assertEquals(t.stats.closed.body_timeout, 0);
});

Deno.test("flood: a body at 1,000 bytes a second is not cut by the minimum rate", async () => {
  await using t = startTestFront({ limits: MINUTE });
  const conn = await t.connect();
  await write(conn, "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 30000\r\n\r\n");
  for (let i = 0; i < 30; i++) {
    await t.timers.tick(1_000);
    await write(conn, "y".repeat(1_000));
    await turns();
  }
  assertEquals(await settlesWithin(status(conn)), "HTTP/1.1 200 OK");
  assertEquals(t.stats.closed.body_rate, 0);
});

Deno.test("flood: a trickled body after a head handed over to Deno.serve (Upgrade) is cut by the minimum rate too", async () => {
  await using t = startTestFront({ limits: MINUTE });
  const conn = await t.connect();
  const done = closed(conn);
  await write(
    conn,
    "POST /upload HTTP/1.1\r\nHost: shop.test\r\nUpgrade: h2c\r\nContent-Length: 100\r\n\r\nx",
  );
  await turns(10);
  await cutBetween(t, done, [9_000, 1_000 + SWEEP_MINUTE], "body_rate");
});

Deno.test("flood: a connection is charged the descriptors it holds: its socket, an upstream while handled, the pipe once handed over", async () => {
  const held = heldHandler();
  await using t = startTestFront({ limits: { descriptors: 1_000 }, handler: held.handler });
  const used = () => t.front.descriptors().used;
  const a = await t.connect();
  const b = await t.connect();
  await t.connect();
  assertEquals(used(), 3, "a client socket each, not four descriptors");
  await write(a, "GET /held HTTP/1.1\r\nHost: shop.test\r\n\r\n");
  while (held.held === 0) await turn();
  assertEquals(used(), 4, "and its upstream connection while a request is handled");
  held.release();
  assertEquals(await settlesWithin(status(a)), "HTTP/1.1 200 OK");
  await turns();
  assertEquals(used(), 3, "back to its socket between requests");
  // Handed over: its end of the pipe, Deno.serve's end and an upstream come on top.
  await write(b, "GET /up HTTP/1.1\r\nHost: shop.test\r\nUpgrade: foo\r\n\r\n");
  assertEquals(await settlesWithin(status(b)), "HTTP/1.1 200 OK");
  assertEquals(used(), 2 + 4);
  b.close();
  a.close();
  while (t.stats.open > 1) await turn();
  assertEquals(used(), 1);
});

Deno.test("flood: a management connection is charged its socket and both pipe ends, from the management reserve", async () => {
  await using t = startTestFront({ piped: true, limits: { plane: "management" } });
  await t.connect();
  await t.connect();
  assertEquals(t.front.descriptors(), { used: 6, budget: planeBudget("management") });
});

Deno.test("flood: the descriptor limit is split into a management reserve and the data plane's pool", () => {
  // 20,000 descriptors: 2,000 kept for the process, 15 % of the rest (at most 3,000) reserved.
  assertEquals(planeBudget("management", 1, 20_000), 2_700);
  assertEquals(planeBudget("data", 1, 20_000), 15_300);
  assertEquals(planeBudget("data", 1 / 2, 20_000), 7_650);
  assertEquals(planeBudget("management", 1, 1_000_000), 3_000);
  assertEquals(planeBudget("management", 1, 1_024), 138);
});

Deno.test("flood: a data plane at its descriptor budget leaves the management listener serving", async () => {
  const held = heldHandler();
  // Room for two handled requests (their socket and upstream each), no more.
  await using data = startTestFront({ limits: { descriptors: 4 }, handler: held.handler });
  await using mgmt = startTestFront({ piped: true, limits: { plane: "management" } });
  for (const conn of [await data.connect(), await data.connect()]) {
    await write(conn, "GET /held HTTP/1.1\r\nHost: shop.test\r\n\r\n");
  }
  while (held.held < 2) await turn();
  const third = await data.connect();
  await settlesWithin(closed(third));
  assertEquals(data.stats.refused.fd_limit, 1);
  const health = await mgmt.connect();
  await write(health, "GET /health HTTP/1.1\r\nHost: waf\r\n\r\n");
  assertEquals(await settlesWithin(status(health)), "HTTP/1.1 200 OK");
  held.release();
});

Deno.test("flood: slow heads filling the management listener are shed for a new connection, and /health answers", async () => {
  await using t = startTestFront({
    piped: true,
    limits: { plane: "management", maxConnections: 10, maxPerClient: 0 },
  });
  const slow: Promise<void>[] = [];
  for (let i = 0; i < 10; i++) {
    const conn = await t.connect();
    await write(conn, "GET / HTTP/1.1\r\nHost: waf\r\nX-Slow: ");
    slow.push(closed(conn));
  }
  const health = await t.connect();
  await write(health, "GET /health HTTP/1.1\r\nHost: waf\r\n\r\n");
  assertEquals(await settlesWithin(status(health)), "HTTP/1.1 200 OK");
  assertEquals(t.stats.refused.total, 0);
  assertEquals(t.stats.closed.shed, 1);
  // The oldest slow head went.
  await settlesWithin(slow[0]!);
  for (const s of slow.slice(1)) ok(await stillPending(s), "the younger slow heads stay");
});

Deno.test("flood: idle keep-alive connections are shed before slow heads, the longest idle first", async () => {
  await using t = startTestFront({ limits: { maxConnections: 4 } });
  const head = await t.connect();
  await write(head, "GET / HTTP/1.1\r\nHost: shop.test\r\n");
  const idle: Deno.Conn[] = [];
  for (let i = 0; i < 3; i++) {
    const conn = await t.connect();
    await write(conn, "GET / HTTP/1.1\r\nHost: shop.test\r\n\r\n");
    assertEquals(await settlesWithin(status(conn)), "HTTP/1.1 200 OK");
    idle.push(conn);
  }
  const gone = [closed(idle[0]!), closed(idle[1]!), closed(head)];
  await t.connect();
  await settlesWithin(gone[0]!);
  ok(await stillPending(gone[1]!), "the next idle one stays");
  ok(await stillPending(gone[2]!), "the older slow head stays while idle ones are there");
  assertEquals(t.stats.closed.shed, 1);
});

Deno.test("flood: a connection whose request is handled is never shed; past the cap with none to shed, one is refused", async () => {
  const held = heldHandler();
  await using t = startTestFront({ limits: { maxConnections: 2 }, handler: held.handler });
  const busy = [await t.connect(), await t.connect()];
  for (const conn of busy) await write(conn, "GET /held HTTP/1.1\r\nHost: shop.test\r\n\r\n");
  while (held.held < 2) await turn();
  await settlesWithin(closed(await t.connect()));
  assertEquals(t.stats.refused.total, 1);
  assertEquals(t.stats.closed.shed, 0);
  held.release();
  for (const conn of busy) assertEquals(await settlesWithin(status(conn)), "HTTP/1.1 200 OK");
});

Deno.test("flood: deadlines shrink as the front fills: silent connections of a full front go at a tenth of header_timeout", async () => {
  await using t = startTestFront({ limits: { maxConnections: 4 } });
  const silent: Promise<void>[] = [];
  for (let i = 0; i < 4; i++) silent.push(closed(await t.connect()));
  // Full: 1 s becomes 100 ms, cut at the first sweep (250 ms).
  await t.timers.tick(260);
  for (const s of silent) await settlesWithin(s);
  assertEquals(t.stats.closed.header_timeout, 4);
  // One connection of four: the whole second.
  const alone = closed(await t.connect());
  await t.timers.tick(760);
  ok(await stillPending(alone), "a quarter full: the configured deadline");
  await t.timers.tick(500);
  await settlesWithin(alone);
});

Deno.test("flood: an authenticated long-lived feed is never shed, though it looks idle between its events", async () => {
  const feeds: ReadableStreamDefaultController<Uint8Array>[] = [];
  await using t = startTestFront({
    piped: true,
    limits: { plane: "management", maxConnections: 2 },
    inner: (_req, innerPort, front) => {
      front.longLived(innerPort);
      return new Response(new ReadableStream({ start: (c) => void feeds.push(c) }));
    },
  });
  const feed = await t.connect();
  await write(feed, "GET /api/events HTTP/1.1\r\nHost: waf\r\n\r\n");
  while (feeds.length === 0) await turn();
  feeds[0]!.enqueue(enc.encode("event: tick\n\n"));
  await turns(10);
  const slow = await t.connect();
  await write(slow, "GET / HTTP/1.1\r\nHost: waf\r\n");
  const feedDone = closed(feed);
  const slowDone = closed(slow);
  await t.connect();
  await settlesWithin(slowDone);
  ok(await stillPending(feedDone), "the feed stays");
  assertEquals(t.stats.closed.shed, 1);
  feeds[0]!.close();
});
