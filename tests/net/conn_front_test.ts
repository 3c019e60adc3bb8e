/**
 * The connection front's deadlines on fake time: a front on a real loopback port, serving
 * HTTP/1.1 itself and piping what it hands over into a private `Deno.serve`, with its timers
 * (`net/timers.ts`) ticked by the test instead of waited out.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { FakeTimers, settlesWithin, stillPending, turn } from "../_helpers/fake_timers.ts";
import { createConnectionStats } from "../../mod/core/connection_stats.ts";
import { type ConnectionLimits, type Front, startFront } from "../../net/conn_front.ts";

const enc = new TextEncoder();
const SECOND: ConnectionLimits = {
  headerTimeoutMs: 1_000,
  bodyTimeoutMs: 1_000,
  keepAliveTimeoutMs: 1_000,
  maxConnections: 0,
  maxPerClient: 0,
};
/** How often the front sweeps its deadlines with one-second limits. */
const SWEEP_MS = 250;

interface TestFront extends AsyncDisposable {
  readonly front: Front;
  readonly timers: FakeTimers;
  readonly stats: ReturnType<ReturnType<typeof createConnectionStats>["listener"]>;
  /** A client connection the front has admitted. */
  connect(): Promise<Deno.Conn>;
}

/** A front whose own server answers `own` (reading the request body first). */
function startTestFront(): TestFront {
  const timers = new FakeTimers();
  const stats = createConnectionStats().listener("test");
  const inner = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      await req.arrayBuffer().catch(() => {});
      return new Response("inner");
    },
  );
  const front = startFront({
    hostname: "127.0.0.1",
    port: 0,
    innerPort: inner.addr.port,
    serve: () => async (req) => {
      await req.arrayBuffer();
      return new Response("own");
    },
    limits: SECOND,
    stats,
    timers,
  });
  const conns: Deno.Conn[] = [];
  return {
    front,
    timers,
    stats,
    async connect() {
      const before = stats.accepted;
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: front.port });
      conns.push(conn);
      // Admitted, so its deadline runs from the fake clock's now.
      while (stats.accepted === before) await turn();
      return conn;
    },
    async [Symbol.asyncDispose]() {
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // closed by the front
        }
      }
      front.close();
      await inner.shutdown();
    },
  };
}

/** Resolves when the peer closes `conn` (reads and drops whatever comes before). */
async function closed(conn: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(4096);
  while ((await conn.read(buf).catch(() => null)) !== null) {
    // the answer, if any
  }
}

/** Reads one answer's first bytes (enough for its status line). */
async function status(conn: Deno.Conn): Promise<string> {
  const buf = new Uint8Array(4096);
  const n = await conn.read(buf);
  return new TextDecoder().decode(buf.subarray(0, n ?? 0)).split("\r\n")[0]!;
}

/**
 * `done` (the connection's close) is still pending after `open` more milliseconds and settles
 * within `cut` more (the deadline and the next sweep); the front counted it under `reason`.
 */
async function cutBetween(
  t: TestFront,
  done: Promise<void>,
  [open, cut]: [number, number],
  reason: "header_timeout" | "body_timeout" | "keepalive_timeout",
): Promise<void> {
  await t.timers.tick(open);
  ok(await stillPending(done), `open until the ${reason}`);
  await t.timers.tick(cut);
  await settlesWithin(done);
  assertEquals(t.stats.closed[reason], 1);
}

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
