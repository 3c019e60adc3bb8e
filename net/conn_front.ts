/**
 * The connection front of a listener: `Deno.serve` has no head, body or keep-alive deadline, no
 * cap on connections, and ends the process when an accept fails at the descriptor limit. So the
 * public port is ours: each accepted connection is admitted or refused (per-client and total
 * caps, the total also bounded by the process's descriptor limit), then piped over loopback into
 * the private `Deno.serve` listener (the way the HTTPS front does), with its request framing
 * followed (`http1_framing.ts`) so that the deadlines match what the client is doing:
 *
 * - the head of a request must arrive within `header_timeout` of its first byte (of the
 *   connection, for the first request), however slowly it trickles;
 * - a body may pause at most `body_timeout` between reads (time the server takes to read is not
 *   the client's);
 * - between requests, a connection may stay silent `keepalive_timeout` after the last byte of the
 *   answer; while the answer has not begun, the site's own upstream deadline applies instead;
 * - an answer the client does not read for `body_timeout` ends the connection (send timeout);
 * - bad chunked framing gets a 400 from the front (the server behind would only close) and is
 *   reported to `onBadFraming` for the access log;
 * - an HTTP/2 connection (its preface, prior knowledge or ALPN `h2`) is followed frame by frame
 *   (`h2_framing.ts`): its first request's header block must be complete within `header_timeout`
 *   of the connection's start, any later header block within `header_timeout` of its first frame,
 *   a request body the server has room for (flow control) may pause at most `body_timeout`, an
 *   answer the client grants no room to (flow control) may wait at most `body_timeout`, and with
 *   no request open the connection may stay `keepalive_timeout` after the last answer ended.
 *
 * Accept failures are counted, logged (at most one line a second) and retried with a growing
 * back-off; nothing here can throw out of the accept loop. With TLS, the front ends TLS itself
 * (`Deno.listenTls`), so the same framing rules apply to the decrypted bytes.
 */
import { type BrokenRequest, RequestFraming } from "./http1_framing.ts";
import { Http2Framing } from "./h2_framing.ts";
import { Http1Connection, type Http1Host } from "./http1_server.ts";
import { type ConnRead, connReader } from "./conn_read.ts";

/** What the front logs with (the process's logger fits). */
export interface FrontLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** Why a connection was refused as it arrived. */
export type RefuseReason = "per_client" | "total" | "fd_limit";
/** Why an open connection was closed by the front. */
export type CloseReason =
  | "header_timeout"
  | "body_timeout"
  | "keepalive_timeout"
  | "send_timeout"
  | "bad_framing";

/**
 * The counters one front writes as plain fields (monitoring reads them at scrape time; the
 * process's connection stats fit).
 */
export interface FrontCounters {
  readonly listener: string;
  open: number;
  accepted: number;
  /** Failed accepts (descriptor limit and the like); each is followed by a back-off. */
  acceptErrors: number;
  readonly refused: Record<RefuseReason, number>;
  readonly closed: Record<CloseReason, number>;
}

export interface ConnectionLimits {
  readonly headerTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** Open connections on this listener; 0 = only the descriptor bound. */
  readonly maxConnections: number;
  /** Open connections from one client address; 0 = no cap. */
  readonly maxPerClient: number;
  /** This front's part of the process's descriptor budget (1 unless it shares a port). */
  readonly descriptorShare?: number;
}

export interface FrontOptions {
  readonly hostname: string;
  readonly port: number;
  readonly tls?: { readonly cert: string; readonly key: string };
  /** Shares the port with the other fronts of this process (data workers). */
  readonly reusePort?: boolean;
  /**
   * The private listener the connections are piped into (all of them without `serve`; with it,
   * only those `serve` does not take: upgrades, HTTP/2, CONNECT).
   */
  readonly innerPort: number;
  /**
   * Serves HTTP/1.1 in the front itself (`http1_server.ts`): no loopback hop for plain requests.
   * Called once a connection with its peer (`client`), it gives the handler of that
   * connection's requests, so nothing about the connection is built again per request.
   */
  readonly serve?: (client: Deno.NetAddr) => (req: Request) => Response | Promise<Response>;
  readonly limits: ConnectionLimits;
  readonly stats: FrontCounters;
  readonly logger?: FrontLogger;
  /**
   * A request whose chunked framing broke; the front has answered it with 400. `clientPort` is
   * the client's source port (a loopback pipe's, behind the HTTPS listener).
   */
  readonly onBadFraming?: (client: string, request: BrokenRequest, clientPort: number) => void;
}

export interface Front {
  readonly hostname: string;
  readonly port: number;
  /** The client address of a piped connection, by the loopback source port the server saw. */
  peer(innerRemotePort: number): { hostname: string; port: number } | undefined;
  /**
   * The connection piped from `innerRemotePort` carries an authenticated long-lived feed (the
   * management listener's realtime streams): from now on it does not count toward the per-client
   * cap, which is there against unauthenticated floods; it still counts toward the total and the
   * descriptor budget.
   */
  longLived(innerRemotePort: number): void;
  /** Stops accepting; open connections go on. */
  stop(): void;
  /** Waits up to `ms` for the open connections to finish by themselves (answers in transit). */
  drain(ms: number): Promise<void>;
  /** Stops accepting and ends every open connection. */
  close(): void;
}

const BAD_REQUEST = new TextEncoder().encode(
  "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n" +
    "connection: close\r\ncontent-length: 36\r\n\r\nBad Request: invalid chunked framing",
);
const BUFFER = 64 * 1024;
/** RFC 9113 §7 error codes of the GOAWAY the front sends before closing an HTTP/2 connection. */
const H2_NO_ERROR = 0x0;
const H2_ENHANCE_YOUR_CALM = 0xb;
/** How long the front's last frame (a GOAWAY) may take before the connection closes anyway. */
const LAST_WRITE_MS = 1000;

/**
 * Descriptors one piped connection holds (the client's, our end of the pipe, the server's end)
 * plus one for its upstream connection; the rest of the limit is kept for the store, logs,
 * workers and outbound connections.
 */
const FDS_PER_CONNECTION = 4;

/** The connections the descriptor limit leaves room for (whole process, all fronts). */
export function descriptorBudget(limits = readLimits()): number {
  if (limits === undefined) return Number.MAX_SAFE_INTEGER;
  const reserve = Math.max(64, Math.floor(limits * 0.1));
  return Math.max(16, Math.floor((limits - reserve) / FDS_PER_CONNECTION));
}

function readLimits(): number | undefined {
  try {
    const text = Deno.readTextFileSync("/proc/self/limits");
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(text);
    return m && m[1] !== "unlimited" ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Shared by every front of the process: the descriptor budget is the process's. */
const processWide = { open: 0, budget: -1 };

interface Piped {
  readonly client: Deno.Conn;
  readonly clientPort: number;
  inner: Deno.Conn | undefined;
  readonly address: string;
  readonly framing: RequestFraming;
  /** When the connection was admitted. */
  readonly opened: number;
  /** Followed frame by frame once the client sent the HTTP/2 preface. */
  h2: Http2Framing | undefined;
  /** When the connection is closed unless something happens; Infinity = no deadline. */
  deadline: number;
  reason: CloseReason;
  heads: number;
  /** A write into the server is pending (its reading is slow, not the client's sending). */
  pushing: boolean;
  /** When a pending write to the client began (0: none). */
  sendingSince: number;
  /** Served by the front itself: between requests, with nothing of the next one read yet. */
  waiting: boolean;
  /** Piped into the private listener (from the start, or handed over by the own server). */
  piped: boolean;
  closed: boolean;
  /** Counted toward its address's per-client cap (not once it carried a long-lived feed). */
  perClient: boolean;
}

export function startFront(options: FrontOptions): Front {
  const { limits, stats, logger } = options;
  if (processWide.budget < 0) {
    processWide.budget = Math.floor(descriptorBudget() * (limits.descriptorShare ?? 1));
  }
  const listener: Deno.Listener = options.tls
    ? Deno.listenTls({
      hostname: options.hostname,
      port: options.port,
      cert: options.tls.cert,
      key: options.tls.key,
      alpnProtocols: ["h2", "http/1.1"],
    })
    : Deno.listen({
      hostname: options.hostname,
      port: options.port,
      ...(options.reusePort ? { reusePort: true } : {}),
    });
  const addr = listener.addr as Deno.NetAddr;
  /** The URL's authority for a request without a usable Host (as `Deno.serve` uses). */
  const authority = `localhost:${addr.port}`;
  const perClient = new Map<string, number>();
  const peers = new Map<number, { hostname: string; port: number; conn: Piped }>();
  const open = new Set<Piped>();
  let stopped = false;
  /** A coarse clock, advanced by the sweep (and on accept): per-byte bookkeeping reads it. */
  let now = Date.now();
  const sweepMs = Math.max(
    50,
    Math.min(1000, Math.floor(Math.min(limits.headerTimeoutMs, limits.bodyTimeoutMs) / 4)),
  );
  const sweep = setInterval(() => {
    now = Date.now();
    for (const c of open) {
      if (c.sendingSince > 0 && now - c.sendingSince > limits.bodyTimeoutMs) {
        end(c, "send_timeout");
      } else if (!c.pushing && now > c.deadline) end(c, c.reason);
    }
  }, sweepMs);
  Deno.unrefTimer(sweep);

  let lastAcceptLog = 0;
  (async () => {
    let backoff = 0;
    while (!stopped) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
        backoff = 0;
      } catch (err) {
        if (stopped || err instanceof Deno.errors.BadResource) return;
        stats.acceptErrors++;
        backoff = Math.min(1000, backoff === 0 ? 10 : backoff * 2);
        const t = Date.now();
        if (t - lastAcceptLog >= 1000) {
          lastAcceptLog = t;
          logger?.warn("accepting a connection failed; retrying", {
            listener: stats.listener,
            error: (err as Error).message,
            retry_ms: backoff,
            open: stats.open,
          });
        }
        await new Promise((resolve) => setTimeout(resolve, backoff));
        continue;
      }
      admit(conn);
    }
  })();

  function refuse(conn: Deno.Conn, reason: RefuseReason): void {
    stats.refused[reason]++;
    try {
      conn.close();
    } catch {
      // already gone
    }
  }

  function admit(conn: Deno.Conn): void {
    stats.accepted++;
    const remote = conn.remoteAddr as Deno.NetAddr;
    const address = plainAddress(remote.hostname);
    if (limits.maxConnections > 0 && stats.open >= limits.maxConnections) {
      return refuse(conn, "total");
    }
    if (processWide.open >= processWide.budget) return refuse(conn, "fd_limit");
    const mine = perClient.get(address) ?? 0;
    if (limits.maxPerClient > 0 && mine >= limits.maxPerClient) {
      return refuse(conn, "per_client");
    }
    perClient.set(address, mine + 1);
    stats.open++;
    processWide.open++;
    now = Date.now();
    const c: Piped = {
      client: conn,
      clientPort: remote.port,
      inner: undefined,
      address,
      framing: new RequestFraming(),
      opened: now,
      h2: undefined,
      deadline: now + limits.headerTimeoutMs,
      reason: "header_timeout",
      heads: 0,
      pushing: false,
      sendingSince: 0,
      waiting: true,
      piped: false,
      closed: false,
      perClient: true,
    };
    open.add(c);
    if (options.serve) serveOwn(c, remote).catch(() => end(c));
    else pipe(c, remote.port).catch(() => end(c));
  }

  /**
   * The front answers the connection's requests itself (`http1_server.ts`); the deadlines follow
   * what the connection is doing, as they follow the piped bytes below.
   */
  async function serveOwn(c: Piped, remote: Deno.NetAddr): Promise<void> {
    (c.client as Deno.TcpConn).setNoDelay?.(true);
    const serve = options.serve!({ transport: "tcp", hostname: c.address, port: remote.port });
    const host: Http1Host = {
      headStarted() {
        c.waiting = false;
        // The first head's deadline runs from the connection's start.
        if (c.heads++ > 0) {
          c.deadline = now + limits.headerTimeoutMs;
          c.reason = "header_timeout";
        }
      },
      readingBody(pending) {
        c.deadline = pending ? now + limits.bodyTimeoutMs : Infinity;
        c.reason = "body_timeout";
      },
      handling() {
        // The answer is the handler's (and the site's deadline).
        c.deadline = Infinity;
      },
      sending(pending) {
        c.sendingSince = pending ? now || 1 : 0;
      },
      idle() {
        c.waiting = true;
        c.deadline = now + limits.keepAliveTimeoutMs;
        c.reason = "keepalive_timeout";
        if (stopped) end(c);
      },
      badFraming(request, reason) {
        stats.closed.bad_framing++;
        recordBroken(c, { ...request, reason });
      },
      badRequest(request, reason) {
        if (request !== undefined) recordBroken(c, { ...request, reason });
      },
      handOver: (pending) => pipe(c, remote.port, pending),
    };
    try {
      await new Http1Connection(c.client, serve, host, authority).run();
    } finally {
      if (!c.piped) end(c);
    }
  }

  function recordBroken(c: Piped, broken: BrokenRequest): void {
    try {
      options.onBadFraming?.(c.address, broken, c.clientPort);
    } catch (err) {
      logger?.warn("recording a request with bad framing failed", {
        error: (err as Error).message,
      });
    }
  }

  async function pipe(c: Piped, clientPort: number, pending?: Uint8Array): Promise<void> {
    c.piped = true;
    let inner: Deno.Conn;
    try {
      inner = await Deno.connect({ hostname: "127.0.0.1", port: options.innerPort });
    } catch {
      stats.refused.fd_limit++;
      return end(c);
    }
    if (c.closed) {
      inner.close();
      return;
    }
    c.inner = inner;
    // Small writes go out at once on both legs (Nagle's delay would add up to 40 ms per answer).
    (inner as Deno.TcpConn).setNoDelay?.(true);
    (c.client as Deno.TcpConn).setNoDelay?.(true);
    const innerPort = (inner.localAddr as Deno.NetAddr).port;
    peers.set(innerPort, { hostname: c.address, port: clientPort, conn: c });
    if (pending !== undefined && pending.length > 0) {
      // What the own server read of the request it hands over goes first, framing followed.
      if (!c.framing.feed(pending)) {
        peers.delete(innerPort);
        return await badFraming(c, inner);
      }
      c.heads = c.framing.heads;
      if (c.framing.phase === "body") {
        // The rest of the body must come as any body's does (Deno.serve has no deadline).
        c.deadline = now + limits.bodyTimeoutMs;
        c.reason = "body_timeout";
      } else if (c.framing.phase === "tunnel" && c.framing.h2) {
        http2(c, pending.subarray(c.framing.tunnelAt));
      } else if (c.framing.unframed) unframed(c);
      else if (c.framing.phase !== "head") c.deadline = Infinity;
      await writeAll(inner, pending);
    }
    // The server's end decides: when it closes, the client's connection goes too (the client
    // finishing first only half-closes the pipe, the answer may still come).
    inbound(c, inner).catch(() => end(c));
    try {
      await outbound(c, inner);
    } finally {
      peers.delete(innerPort);
      end(c);
    }
  }

  /** Client to server: follows the framing, moves the deadline, answers bad framing. */
  async function inbound(c: Piped, inner: Deno.Conn): Promise<void> {
    const buf = new Uint8Array(BUFFER);
    const f = c.framing;
    const read = connReader(c.client);
    while (!c.closed) {
      const n = await readOrEnd(read, buf);
      if (n === null) {
        // The client finished sending: the server may still answer.
        await inner.closeWrite().catch(() => {});
        return;
      }
      const chunk = buf.subarray(0, n);
      if (c.h2 !== undefined) {
        c.h2.fromClient(chunk, now);
        http2Deadline(c, c.h2);
      } else if (f.phase !== "tunnel" && !f.feed(chunk)) {
        await badFraming(c, inner);
        return;
      } else followed(c, chunk);
      c.pushing = true;
      try {
        await writeAll(inner, chunk);
      } finally {
        c.pushing = false;
      }
      if (f.phase === "body") c.deadline = now + limits.bodyTimeoutMs;
    }
  }

  /** The deadline for where the HTTP/1.1 framing is after `chunk`. */
  function followed(c: Piped, chunk: Uint8Array): void {
    const f = c.framing;
    switch (f.phase) {
      case "head":
        if (f.heads !== c.heads) {
          c.heads = f.heads;
          c.deadline = now + limits.headerTimeoutMs;
          c.reason = "header_timeout";
        }
        break;
      case "body":
        c.deadline = now + limits.bodyTimeoutMs;
        c.reason = "body_timeout";
        break;
      case "idle":
        // The request is complete: the answer is the server's (and the site's deadline).
        c.deadline = Infinity;
        c.reason = "keepalive_timeout";
        break;
      case "tunnel":
        if (f.h2) http2(c, chunk.subarray(f.tunnelAt));
        else if (f.unframed) unframed(c);
        else c.deadline = Infinity;
        break;
    }
  }

  /**
   * A head the follower cannot frame: the server refuses it and closes; should it answer after
   * all, the connection ends at the head's deadline (the follower cannot tell the next request).
   */
  function unframed(c: Piped): void {
    c.deadline = Math.min(c.deadline, now + limits.headerTimeoutMs);
    c.reason = "header_timeout";
  }

  /** Server to client: the answer's bytes restart the keep-alive deadline. */
  async function outbound(c: Piped, inner: Deno.Conn): Promise<void> {
    const buf = new Uint8Array(BUFFER);
    const f = c.framing;
    const read = connReader(inner);
    while (!c.closed) {
      const n = await readOrEnd(read, buf);
      if (n === null) return;
      const chunk = buf.subarray(0, n);
      if (f.upgradeAsked) f.answered(chunk);
      c.sendingSince = now || 1;
      try {
        await writeAll(c.client, chunk);
      } finally {
        c.sendingSince = 0;
      }
      if (c.h2 !== undefined) {
        // After the write: an answer's end the client is slow to take is not idle time.
        c.h2.fromServer(chunk, now);
        http2Deadline(c, c.h2);
      } else if (f.phase === "idle") {
        c.deadline = now + limits.keepAliveTimeoutMs;
        c.reason = "keepalive_timeout";
      }
    }
  }

  /** The client sent the HTTP/2 preface; `rest` is what came after it in the same chunk. */
  function http2(c: Piped, rest: Uint8Array): void {
    if (c.framing.heads !== 1) {
      // Not at the connection's start: HTTP/1.1 for the server, which refuses it; later bytes
      // do not move the deadline.
      c.deadline = Math.min(c.deadline, now + limits.headerTimeoutMs);
      c.reason = "header_timeout";
      return;
    }
    c.h2 = new Http2Framing();
    c.h2.fromClient(rest, now);
    http2Deadline(c, c.h2);
  }

  /** The earliest of the deadlines that apply to where the HTTP/2 connection is. */
  function http2Deadline(c: Piped, h: Http2Framing): void {
    let deadline = Infinity;
    let reason: CloseReason = "keepalive_timeout";
    const body = h.bodySince;
    if (body >= 0) {
      deadline = body + limits.bodyTimeoutMs;
      reason = "body_timeout";
    }
    const held = h.answerHeldSince;
    if (held >= 0 && held + limits.bodyTimeoutMs < deadline) {
      deadline = held + limits.bodyTimeoutMs;
      reason = "send_timeout";
    }
    const head = h.requests === 0 ? c.opened : h.blockSince;
    if (head >= 0 && head + limits.headerTimeoutMs <= deadline) {
      deadline = head + limits.headerTimeoutMs;
      reason = "header_timeout";
    }
    // Idle until a header block begins (it has its own deadline, as an HTTP/1.1 head has).
    const idle = h.requests > 0 && h.open === 0 && h.blockSince < 0;
    if (idle && h.idleSince + limits.keepAliveTimeoutMs < deadline) {
      deadline = h.idleSince + limits.keepAliveTimeoutMs;
      reason = "keepalive_timeout";
    }
    c.deadline = deadline;
    c.reason = reason;
  }

  async function badFraming(c: Piped, _inner: Deno.Conn): Promise<void> {
    stats.closed.bad_framing++;
    const broken = c.framing.broken!;
    // The server behind has the head and part of the body: cut it off before it answers, and
    // answer ourselves (it would only close the connection).
    c.inner?.close();
    c.inner = undefined;
    await writeAll(c.client, BAD_REQUEST).catch(() => {});
    recordBroken(c, broken);
    end(c);
  }

  function end(c: Piped, reason?: CloseReason): void {
    if (c.closed) return;
    c.closed = true;
    if (reason) stats.closed[reason]++;
    open.delete(c);
    stats.open--;
    processWide.open--;
    uncount(c);
    // An HTTP/2 connection closed at a deadline says so first (RFC 9113 §6.8), unless a write
    // to the client is still pending (it would not get through, and would follow a partial one).
    const goaway = reason !== undefined && c.sendingSince === 0
      ? c.h2?.goaway(reason === "keepalive_timeout" ? H2_NO_ERROR : H2_ENHANCE_YOUR_CALM)
      : undefined;
    try {
      c.inner?.close();
    } catch {
      // already closed
    }
    if (goaway !== undefined) closeAfter(c.client, goaway);
    else closeConn(c.client);
  }

  function uncount(c: Piped): void {
    if (!c.perClient) return;
    c.perClient = false;
    const left = (perClient.get(c.address) ?? 1) - 1;
    if (left <= 0) perClient.delete(c.address);
    else perClient.set(c.address, left);
  }

  function stop(): void {
    if (stopped) return;
    stopped = true;
    try {
      listener.close();
    } catch {
      // already closed
    }
    // Connections the front serves that wait for a next request end now; the others after
    // their answer (`idle`).
    for (const c of open) if (!c.piped && c.waiting) end(c);
  }

  return {
    hostname: addr.hostname,
    port: addr.port,
    peer: (port) => peers.get(port),
    longLived(port) {
      const c = peers.get(port)?.conn;
      if (c && !c.closed) uncount(c);
    },
    stop,
    async drain(ms) {
      const until = Date.now() + ms;
      while (open.size > 0 && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    close() {
      stop();
      clearInterval(sweep);
      for (const c of open) end(c);
    },
  };
}

/**
 * The bytes read, or null at the end or on an error (both end the direction). `read` is the
 * connection's {@link connReader}: both directions live as long as the connection, and
 * `conn.read` would leave old-generation garbage at every read (net/conn_read.ts).
 */
async function readOrEnd(read: ConnRead, buf: Uint8Array): Promise<number | null> {
  try {
    return await read(buf);
  } catch {
    return null;
  }
}

function closeConn(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}

/** Writes `last` and closes; a client that takes nothing is closed after {@link LAST_WRITE_MS}. */
function closeAfter(conn: Deno.Conn, last: Uint8Array): void {
  const timer = setTimeout(() => closeConn(conn), LAST_WRITE_MS);
  writeAll(conn, last).catch(() => {}).finally(() => {
    clearTimeout(timer);
    closeConn(conn);
  });
}

async function writeAll(conn: Deno.Conn, chunk: Uint8Array): Promise<void> {
  let at = 0;
  while (at < chunk.length) at += await conn.write(chunk.subarray(at));
}

function plainAddress(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}
