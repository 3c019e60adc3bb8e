/**
 * The connection front's deadlines on fake time: a front on a real loopback port, serving
 * HTTP/1.1 itself and piping what it hands over into a private `Deno.serve`, with its timers
 * (`net/timers.ts`) ticked by the test instead of waited out.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { settlesWithin, stillPending, turn } from "../_helpers/fake_timers.ts";
import { closed, cutBetween, startTestFront, status } from "./test_front.ts";

const enc = new TextEncoder();
/** How often the front sweeps its deadlines with one-second limits. */
const SWEEP_MS = 250;

Deno.test("conn front: a request head that trickles in is cut at the header deadline, counted from the connection's start", async () => {
  await using t = startTestFront();
  const conn = await t.connect();
  const done = closed(conn);
  await t.timers.tick(400);
  await conn.write(enc.encode("GET / HTTP/1.1\r\nHost: shop.test\r\n"));
  // A header byte every 200 ms: never silent for long, never complete.
  for (let i = 0; i < 2; i++) {
    await t.timers.tick(200);
    await conn.write(enc.encode("X"));
    await turn();
  }
  await cutBetween(t, done, [199, SWEEP_MS + 1], "header_timeout");
});

Deno.test("conn front: a connection that sends nothing is cut at the header deadline", async () => {
  await using t = startTestFront();
  const conn = await t.connect();
  await cutBetween(t, closed(conn), [999, SWEEP_MS + 1], "header_timeout");
});

Deno.test("conn front: a slow body is cut at the body deadline; a body that keeps coming is not", async () => {
  await using t = startTestFront();
  const conn = await t.connect();
  const done = closed(conn);
  await conn.write(enc.encode(
    "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 100000\r\n\r\nfirst=part",
  ));
  await turn();
  await cutBetween(t, done, [900, 1_000 + SWEEP_MS], "body_timeout");

  // A body in pieces 400 ms apart over 2.4 s (longer than every deadline) gets through.
  const steady = await t.connect();
  await steady.write(enc.encode(
    "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 6\r\nConnection: close\r\n\r\n",
  ));
  for (const ch of "abcdef") {
    await t.timers.tick(400);
    await steady.write(enc.encode(ch));
    for (let i = 0; i < 5; i++) await turn();
  }
  assertEquals(await settlesWithin(status(steady)), "HTTP/1.1 200 OK");
  assertEquals(t.stats.closed.body_timeout, 1);
});

Deno.test("conn front: a body that stops after a head handed over to Deno.serve (Upgrade) is cut at the body deadline too", async () => {
  await using t = startTestFront();
  const conn = await t.connect();
  const done = closed(conn);
  // An Upgrade header sends the connection to Deno.serve, which has no body deadline.
  await conn.write(enc.encode(
    "POST /upload HTTP/1.1\r\nHost: shop.test\r\nUpgrade: h2c\r\nContent-Length: 100\r\n\r\n",
  ));
  for (let i = 0; i < 5; i++) await turn();
  await cutBetween(t, done, [900, 1_000 + SWEEP_MS], "body_timeout");
});

Deno.test("conn front: a keep-alive connection idle past the keep-alive deadline is closed; one in use is not", async () => {
  await using t = startTestFront();
  const conn = await t.connect();
  // Three requests 600 ms apart on one connection: each gap is within the 1 s deadline.
  for (let i = 0; i < 3; i++) {
    await conn.write(enc.encode("GET /k HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    assertEquals(await settlesWithin(status(conn)), "HTTP/1.1 200 OK");
    await turn();
    await t.timers.tick(600);
  }
  await cutBetween(t, closed(conn), [0, 1_000 + SWEEP_MS], "keepalive_timeout");
  assertEquals(t.stats.closed.header_timeout, 0);
});

Deno.test("conn front: drain waits on the front's clock for open connections, then gives up", async () => {
  await using t = startTestFront();
  await t.connect();
  const drained = t.front.drain(100);
  ok(await stillPending(drained), "a connection is open");
  await t.timers.tick(100);
  await settlesWithin(drained);
  assertEquals(t.stats.open, 1);
});
