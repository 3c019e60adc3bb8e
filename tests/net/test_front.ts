/**
 * A connection front for tests: on a real loopback port, serving HTTP/1.1 itself (or, with
 * `piped`, piping every connection as the management listener does) into a private
 * `Deno.serve`, with its timers (`net/timers.ts`) ticked by the test instead of waited out.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { FakeTimers, settlesWithin, stillPending, turn } from "../_helpers/fake_timers.ts";
import { createConnectionStats } from "../../mod/core/connection_stats.ts";
import { type ConnectionLimits, type Front, startFront } from "../../net/conn_front.ts";

/** One-second deadlines, no caps. */
export const SECOND: ConnectionLimits = {
  headerTimeoutMs: 1_000,
  bodyTimeoutMs: 1_000,
  keepAliveTimeoutMs: 1_000,
  maxConnections: 0,
  maxPerClient: 0,
};

export interface TestFront extends AsyncDisposable {
  readonly front: Front;
  readonly timers: FakeTimers;
  readonly stats: ReturnType<ReturnType<typeof createConnectionStats>["listener"]>;
  /** A client connection the front has taken (admitted or refused). */
  connect(): Promise<Deno.Conn>;
}

export interface TestFrontOptions {
  /** Limits over {@link SECOND}. */
  readonly limits?: Partial<ConnectionLimits>;
  /** Every connection piped into `Deno.serve` (the management listener's way). */
  readonly piped?: boolean;
  /** The own server's handler (default: reads the body, answers `own`). */
  readonly handler?: (req: Request) => Response | Promise<Response>;
  /** `Deno.serve`'s handler behind the front (default: reads the body, answers `inner`). */
  readonly inner?: (req: Request, innerPort: number, front: Front) => Response;
}

/** A front whose own server answers `own` and whose `Deno.serve` answers `inner`. */
export function startTestFront(options: TestFrontOptions = {}): TestFront {
  const timers = new FakeTimers();
  const stats = createConnectionStats().listener("test");
  /** The front, once started (the inner handler runs only after). */
  const started: { front?: Front } = {};
  const inner = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req, info) => {
      if (options.inner) return options.inner(req, info.remoteAddr.port, started.front!);
      await req.arrayBuffer().catch(() => {});
      return new Response("inner");
    },
  );
  const handler = options.handler ?? (async (req: Request) => {
    await req.arrayBuffer();
    return new Response("own");
  });
  const front = startFront({
    hostname: "127.0.0.1",
    port: 0,
    innerPort: inner.addr.port,
    serve: options.piped ? undefined : () => handler,
    limits: { ...SECOND, ...options.limits },
    stats,
    timers,
  });
  started.front = front;
  const conns: Deno.Conn[] = [];
  return {
    front,
    timers,
    stats,
    async connect() {
      const before = stats.accepted;
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: front.port });
      conns.push(conn);
      // Taken, so its deadline runs from the fake clock's now.
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
export async function closed(conn: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(4096);
  while ((await conn.read(buf).catch(() => null)) !== null) {
    // the answer, if any
  }
}

/** Reads one answer's first bytes (enough for its status line). */
export async function status(conn: Deno.Conn): Promise<string> {
  const buf = new Uint8Array(4096);
  const n = await conn.read(buf);
  return new TextDecoder().decode(buf.subarray(0, n ?? 0)).split("\r\n")[0]!;
}

/**
 * `done` (the connection's close) is still pending after `open` more milliseconds and settles
 * within `cut` more (the deadline and the next sweep); the front counted it under `reason`.
 */
export async function cutBetween(
  t: TestFront,
  done: Promise<void>,
  [open, cut]: [number, number],
  reason: "header_timeout" | "body_timeout" | "keepalive_timeout" | "body_rate",
): Promise<void> {
  await t.timers.tick(open);
  ok(await stillPending(done), `open until the ${reason}`);
  await t.timers.tick(cut);
  await settlesWithin(done);
  assertEquals(t.stats.closed[reason], 1);
}
