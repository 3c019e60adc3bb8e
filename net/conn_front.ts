/**
 * The connection front of a listener: `Deno.serve` has no head, body or keep-alive deadline, no
 * cap on connections, and ends the process when an accept fails at the descriptor limit. So the
 * public port is ours: each accepted connection is admitted or refused (the per-client cap, by
 * IPv4 address or IPv6 /64, `client_key.ts`; the total cap and the plane's descriptor pool,
 * `descriptors.ts`, where a full front first sheds the connection that does least,
 * `shedding.ts`), then piped over loopback into the private `Deno.serve` listener (the way the
 * HTTPS front does), with its request framing followed (`http1_framing.ts`) so that the
 * deadlines match what the client is doing (past half full, each shrinks with the pressure):
 *
 * - the head of a request must arrive within `header_timeout` of its first byte (of the
 *   connection, for the first request), however slowly it trickles;
 * - a body may pause at most `body_timeout` between reads (time the server takes to read is not
 *   the client's), and must average `body_min_rate` of the client's time once
 *   `body_min_rate_after` of it passed;
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
 *
 * The piping is `front_pipe.ts`, the own server's connections `front_own.ts`, one connection
 * and its deadline `front_conn.ts`; the deadlines run on the front's timers (`net/timers.ts`).
 */
import type { BrokenRequest } from "./http1_framing.ts";
import {
  type CloseReason,
  type ConnectionLimits,
  FrontConnection,
  type FrontContext,
  type FrontCounters,
  type Peer,
  type RefuseReason,
} from "./front_conn.ts";
import { serveOwn } from "./front_own.ts";
import { pipe, writeAll } from "./front_pipe.ts";
import type { Http1Server } from "./http1_server.ts";
import { clientKey, plainAddress } from "./client_key.ts";
import {
  type DescriptorPool,
  openPool,
  OWN_DESCRIPTORS,
  PIPED_DESCRIPTORS,
  planeBudget,
  releasePool,
} from "./descriptors.ts";
import {
  deadlineFactor,
  idleKeepAlive,
  nominalMs,
  SHED_IDLE_FROM,
  SHED_IDLE_TO,
  shedOrder,
  ShedQueue,
} from "./shedding.ts";
import { realTimers, type TimerId, type Timers } from "./timers.ts";

export type { CloseReason, ConnectionLimits, FrontCounters, RefuseReason };

/** What the front logs with (the process's logger fits). */
export interface FrontLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
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
  /** The clock and timers of the deadlines, the sweep and the back-off (default: the real ones). */
  readonly timers?: Timers;
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
  /** The descriptors this front's plane holds on this thread, and may hold. */
  descriptors(): { readonly used: number; readonly budget: number };
  /** Stops accepting; open connections go on. */
  stop(): void;
  /** Waits up to `ms` for the open connections to finish by themselves (answers in transit). */
  drain(ms: number): Promise<void>;
  /** Stops accepting and ends every open connection. */
  close(): void;
}

/** RFC 9113 §7 error codes of the GOAWAY the front sends before closing an HTTP/2 connection. */
const H2_NO_ERROR = 0x0;
const H2_ENHANCE_YOUR_CALM = 0xb;
/** How long the front's last frame (a GOAWAY) may take before the connection closes anyway. */
const LAST_WRITE_MS = 1000;

/** Starts a front on its port; see the module's comment. */
export function startFront(options: FrontOptions): Front {
  return new ConnectionFront(options);
}

/** A listener's connection front: admission, the deadline sweep and the accept loop. */
class ConnectionFront implements Front, FrontContext {
  readonly hostname: string;
  readonly port: number;
  readonly limits: ConnectionLimits;
  readonly stats: FrontCounters;
  readonly innerPort: number;
  readonly peers = new Map<number, Peer>();
  #stopped = false;
  /** A coarse clock, advanced by the sweep (and on accept): per-byte bookkeeping reads it. */
  now: number;
  readonly #options: FrontOptions;
  readonly #timers: Timers;
  readonly #listener: Deno.Listener;
  /** What the own server's connections share (undefined: every connection is piped). */
  readonly #server: Http1Server | undefined;
  readonly #open = new Set<FrontConnection>();
  readonly #perClient = new Map<string, number>();
  readonly #sweep: TimerId;
  #lastAcceptLog = -Infinity;
  /** The plane's descriptor pool on this thread (shared with its other fronts here). */
  readonly #pool: DescriptorPool;
  #released = false;
  /** What a connection is charged: served here, while its request is handled, piped. */
  readonly #own: number;
  readonly #handled: number;
  readonly #piped: number;
  /** Who goes first when the front is full. */
  readonly #shed = new ShedQueue();

  constructor(options: FrontOptions) {
    this.#options = options;
    this.limits = options.limits;
    this.stats = options.stats;
    this.innerPort = options.innerPort;
    this.#timers = options.timers ?? realTimers;
    this.now = this.#timers.now();
    const limits = this.limits;
    const plane = limits.plane ?? "data";
    this.#pool = openPool(
      plane,
      () => limits.descriptors ?? planeBudget(plane, limits.descriptorShare ?? 1),
    );
    const extra = limits.extraDescriptors ?? 0;
    // A data-plane request may hold an upstream connection; a management one holds none.
    const upstream = plane === "data" ? 1 : 0;
    this.#own = OWN_DESCRIPTORS + extra;
    this.#handled = this.#own + upstream;
    this.#piped = PIPED_DESCRIPTORS + extra + upstream;
    try {
      this.#listener = this.#listen(options);
    } catch (err) {
      releasePool(this.#pool);
      throw err;
    }
    const addr = this.#listener.addr as Deno.NetAddr;
    this.hostname = addr.hostname;
    this.port = addr.port;
    this.#server = options.serve
      ? { authority: `localhost:${addr.port}`, timers: this.#timers }
      : undefined;
    const { headerTimeoutMs, bodyTimeoutMs } = this.limits;
    const sweepMs = Math.max(
      50,
      Math.min(1000, Math.floor(Math.min(headerTimeoutMs, bodyTimeoutMs) / 4)),
    );
    this.#sweep = this.#timers.setInterval(() => this.#sweepDeadlines(), sweepMs);
    this.#timers.unref(this.#sweep);
    this.#accept();
  }

  #listen(options: FrontOptions): Deno.Listener {
    return options.tls
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
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  peer(innerRemotePort: number): { hostname: string; port: number } | undefined {
    return this.peers.get(innerRemotePort);
  }

  longLived(innerRemotePort: number): void {
    const c = this.peers.get(innerRemotePort)?.conn;
    if (c && !c.closed) this.#uncount(c);
  }

  descriptors(): { readonly used: number; readonly budget: number } {
    return { used: this.#pool.used, budget: this.#pool.budget };
  }

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    try {
      this.#listener.close();
    } catch {
      // already closed
    }
    // Connections the front serves that wait for a next request end now; the others after
    // their answer (`idle`).
    for (const c of this.#open) if (!c.piped && c.waiting) this.end(c);
  }

  async drain(ms: number): Promise<void> {
    const timers = this.#timers;
    const until = timers.now() + ms;
    while (this.#open.size > 0 && timers.now() < until) {
      await new Promise((resolve) => timers.setTimeout(() => resolve(undefined), 10));
    }
  }

  close(): void {
    this.stop();
    this.#timers.clearInterval(this.#sweep);
    for (const c of this.#open) this.end(c);
    if (!this.#released) {
      this.#released = true;
      releasePool(this.#pool);
    }
  }

  end(c: FrontConnection, reason?: CloseReason): void {
    if (c.closed) return;
    c.closed = true;
    if (reason) this.stats.closed[reason]++;
    this.#open.delete(c);
    this.stats.open--;
    this.#pool.used -= c.descriptors;
    c.descriptors = 0;
    this.#uncount(c);
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
    if (goaway !== undefined) this.#closeAfter(c.client, goaway);
    else closeConn(c.client);
  }

  recordBroken(c: FrontConnection, broken: BrokenRequest): void {
    try {
      this.#options.onBadFraming?.(c.address, broken, c.clientPort);
    } catch (err) {
      this.#options.logger?.warn("recording a request with bad framing failed", {
        error: (err as Error).message,
      });
    }
  }

  piped(c: FrontConnection): void {
    this.#charge(c, this.#piped);
  }

  handling(c: FrontConnection, busy: boolean): void {
    if (!c.piped) this.#charge(c, busy ? this.#handled : this.#own);
  }

  #charge(c: FrontConnection, n: number): void {
    if (c.closed) return;
    this.#pool.used += n - c.descriptors;
    c.descriptors = n;
  }

  /** How full the front is: of its `max_connections` or of its plane's pool, the fuller. */
  #pressure(): number {
    const max = this.limits.maxConnections;
    return Math.max(max > 0 ? this.stats.open / max : 0, this.#pool.pressure);
  }

  /**
   * Ends the connections past their deadline, each deadline shortened by the pressure
   * (`shedding.ts`); near full, idle keep-alive connections go first.
   */
  #sweepDeadlines(): void {
    const now = this.now = this.#timers.now();
    const limits = this.limits;
    const pressure = this.#pressure();
    const factor = deadlineFactor(pressure);
    const sendMs = limits.bodyTimeoutMs * factor;
    for (const c of this.#open) {
      if (
        c.sendingSince > 0 && now - c.sendingSince > (c.perClient ? sendMs : limits.bodyTimeoutMs)
      ) {
        this.end(c, "send_timeout");
      } else if (!c.pushing) {
        const cut = factor < 1 && c.deadline !== Infinity && c.perClient
          ? (1 - factor) * nominalMs(c.reason, limits)
          : 0;
        if (now > c.deadline - cut) this.end(c, c.reason);
      }
    }
    this.#shed.clear();
    if (pressure >= SHED_IDLE_FROM) this.#shedIdle();
  }

  /** Closes idle keep-alive connections, the longest idle first, until the pressure eases. */
  #shedIdle(): void {
    const order = shedOrder(this.#open, this.now, this.limits);
    for (const c of order) {
      if (this.#pressure() < SHED_IDLE_TO || !idleKeepAlive(c)) return;
      this.end(c, "shed");
    }
  }

  /**
   * Makes room for a connection charged `cost` by shedding the connections that do least
   * (`shedding.ts`); whether there is room now.
   */
  #makeRoom(cost: number): boolean {
    const max = this.limits.maxConnections;
    while ((max > 0 && this.stats.open >= max) || !this.#pool.fits(cost)) {
      const victim = this.#shed.next(this.#open, this.#timers.now(), this.limits);
      if (victim === undefined) return false;
      this.end(victim, "shed");
    }
    return true;
  }

  /** Accepts until stopped; a failed accept is counted, logged and retried after a back-off. */
  async #accept(): Promise<void> {
    const { stats, logger } = this.#options;
    let backoff = 0;
    while (!this.#stopped) {
      let conn: Deno.Conn;
      try {
        conn = await this.#listener.accept();
        backoff = 0;
      } catch (err) {
        if (this.#stopped || err instanceof Deno.errors.BadResource) return;
        stats.acceptErrors++;
        backoff = Math.min(1000, backoff === 0 ? 10 : backoff * 2);
        const t = this.#timers.now();
        if (t - this.#lastAcceptLog >= 1000) {
          this.#lastAcceptLog = t;
          logger?.warn("accepting a connection failed; retrying", {
            listener: stats.listener,
            error: (err as Error).message,
            retry_ms: backoff,
            open: stats.open,
          });
        }
        await new Promise((resolve) => this.#timers.setTimeout(() => resolve(undefined), backoff));
        continue;
      }
      this.#admit(conn);
    }
  }

  #refuse(conn: Deno.Conn, reason: RefuseReason): void {
    this.stats.refused[reason]++;
    closeConn(conn);
  }

  #admit(conn: Deno.Conn): void {
    const { stats, limits } = this;
    stats.accepted++;
    const remote = conn.remoteAddr as Deno.NetAddr;
    const address = plainAddress(remote.hostname);
    const key = clientKey(address);
    // The client's own cap first: a client at it cannot shed others to get in.
    const mine = this.#perClient.get(key) ?? 0;
    if (limits.maxPerClient > 0 && mine >= limits.maxPerClient) {
      return this.#refuse(conn, "per_client");
    }
    const serve = this.#options.serve;
    const cost = serve !== undefined ? this.#own : this.#piped;
    if (!this.#makeRoom(cost)) {
      const total = limits.maxConnections > 0 && stats.open >= limits.maxConnections;
      return this.#refuse(conn, total ? "total" : "fd_limit");
    }
    this.#perClient.set(key, mine + 1);
    stats.open++;
    this.now = this.#timers.now();
    const c = new FrontConnection(conn, address, key, remote.port, this.now);
    this.#charge(c, cost);
    c.deadline = this.now + limits.headerTimeoutMs;
    this.#open.add(c);
    if (serve !== undefined) serveOwn(this, c, serve, this.#server!).catch(() => this.end(c));
    else pipe(this, c, remote.port).catch(() => this.end(c));
  }

  #uncount(c: FrontConnection): void {
    if (!c.perClient) return;
    c.perClient = false;
    const left = (this.#perClient.get(c.key) ?? 1) - 1;
    if (left <= 0) this.#perClient.delete(c.key);
    else this.#perClient.set(c.key, left);
  }

  /** Writes `last` and closes; a client that takes nothing is closed after {@link LAST_WRITE_MS}. */
  #closeAfter(conn: Deno.Conn, last: Uint8Array): void {
    const timers = this.#timers;
    const timer = timers.setTimeout(() => closeConn(conn), LAST_WRITE_MS);
    writeAll(conn, last).catch(() => {}).finally(() => {
      timers.clearTimeout(timer);
      closeConn(conn);
    });
  }
}

function closeConn(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}
