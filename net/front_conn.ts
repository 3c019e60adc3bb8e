/**
 * One connection of a connection front (`conn_front.ts`), what its handling needs of the front
 * (the limits, counters, coarse clock and the way to end it), and the shapes the front shares
 * with its callers: the limits it applies and the counters it writes.
 */
import type { Plane } from "./descriptors.ts";
import type { Http2Framing } from "./h2_framing.ts";
import type { HeadGate } from "./head_gate.ts";
import { type BrokenRequest, RequestFraming } from "./http1_framing.ts";

export interface ConnectionLimits {
  readonly headerTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** Open connections on this listener; 0 = only the descriptor bound. */
  readonly maxConnections: number;
  /** Open connections from one client (an IPv4 address, an IPv6 /64); 0 = no cap. */
  readonly maxPerClient: number;
  /**
   * The least average rate of a request body, in bytes a second of the client's time (time the
   * server spends not reading is not counted), once `bodyMinRateAfterMs` of it have passed
   * (Apache's `mod_reqtimeout` `MinRate`); 0 or absent: none.
   */
  readonly bodyMinRate?: number;
  readonly bodyMinRateAfterMs?: number;
  /** This front's part of its plane's descriptor pool (1 unless it shares a port). */
  readonly descriptorShare?: number;
  /**
   * The descriptor pool the front draws from (default `data`): the management listener's is a
   * reserve of its own, and its requests hold no upstream connection.
   */
  readonly plane?: Plane;
  /** The pool's size in descriptors (default: from the process's limit, `descriptors.ts`). */
  readonly descriptors?: number;
  /** Descriptors each connection holds outside this front (the HTTPS front's TLS socket, pipe). */
  readonly extraDescriptors?: number;
}

/** Why a connection was refused as it arrived. */
export type RefuseReason = "per_client" | "total" | "fd_limit";
/** Why an open connection was closed by the front. */
export type CloseReason =
  | "header_timeout"
  | "body_timeout"
  | "keepalive_timeout"
  | "send_timeout"
  | "bad_framing"
  | "body_rate"
  | "shed";

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

/** A piped connection's client, by the loopback source port the private server saw. */
export interface Peer {
  readonly hostname: string;
  readonly port: number;
  readonly conn: FrontConnection;
}

/** What a connection's handling needs of its front. */
export interface FrontContext {
  readonly limits: ConnectionLimits;
  readonly stats: FrontCounters;
  /** The front's coarse clock, advanced by its sweep and on accept: per-byte code reads it. */
  readonly now: number;
  /** The front stopped accepting (a connection between requests ends then). */
  readonly stopped: boolean;
  /** The private listener connections are piped into. */
  readonly innerPort: number;
  /** Piped connections by the loopback source port of their pipe. */
  readonly peers: Map<number, Peer>;
  /** Ends `c` (counted under `reason` when the front closes it at a deadline). */
  end(c: FrontConnection, reason?: CloseReason): void;
  /** Hands a refused request to the front's `onBadFraming`, for the access log. */
  recordBroken(c: FrontConnection, broken: BrokenRequest): void;
  /** `c` now holds the descriptors of a piped connection (it was handed over). */
  piped(c: FrontConnection): void;
  /** `c`'s request is handled (`true`: it may hold an upstream connection) or done. */
  handling(c: FrontConnection, busy: boolean): void;
}

/** One admitted connection: its framing followed, its deadline and what it is doing. */
export class FrontConnection {
  /** The pipe into the private listener, once piped. */
  inner: Deno.Conn | undefined = undefined;
  readonly framing = new RequestFraming();
  /** Checks each request head before it is piped (a connection the own server handed over). */
  gate: HeadGate | undefined = undefined;
  /** Followed frame by frame once the client sent the HTTP/2 preface. */
  h2: Http2Framing | undefined = undefined;
  /** When the connection is closed unless something happens; Infinity = no deadline. */
  deadline: number;
  reason: CloseReason = "header_timeout";
  heads = 0;
  /** A write into the server is pending (its reading is slow, not the client's sending). */
  pushing = false;
  /** When a pending write to the client began (0: none). */
  sendingSince = 0;
  /** Served by the front itself: between requests, with nothing of the next one read yet. */
  waiting = true;
  /** Piped into the private listener (from the start, or handed over by the own server). */
  piped = false;
  closed = false;
  /** Counted toward its client's per-client cap (not once it carried a long-lived feed). */
  perClient = true;
  /** The descriptors it is charged in its front's pool. */
  descriptors = 0;
  // The request body in progress, for the minimum rate: bytes received, the client's time
  // spent so far (waiting for bytes), and since when it is waited for now (-1: not waiting).
  bodyBytes = 0;
  bodyWaited = 0;
  waitFrom = -1;

  constructor(
    readonly client: Deno.Conn,
    /** The client's address (IPv4-mapped IPv6 as plain IPv4) and source port. */
    readonly address: string,
    /** What it counts under for the per-client cap (`client_key.ts`). */
    readonly key: string,
    readonly clientPort: number,
    /** When the connection was admitted; its first head is due `headerTimeoutMs` after. */
    readonly opened: number,
  ) {
    this.deadline = Infinity;
  }

  /** A request body begins: its rate is counted from here. */
  bodyBegins(): void {
    this.bodyBytes = 0;
    this.bodyWaited = 0;
    this.waitFrom = -1;
  }

  /** `n` bytes of the body came at `now` (ending a wait, if one was on). */
  bodyArrived(n: number, now: number): void {
    if (this.waitFrom >= 0) this.bodyWaited += Math.max(0, now - this.waitFrom);
    this.waitFrom = -1;
    this.bodyBytes += n;
  }

  /**
   * From `now` the body waits for the client: the deadline is the pause `body_timeout` allows,
   * or sooner where the minimum rate is due (the grace and `bytes / rate` of the client's time,
   * less the time it has taken so far).
   */
  awaitBody(now: number, limits: ConnectionLimits): void {
    this.waitFrom = now;
    this.deadline = now + limits.bodyTimeoutMs;
    this.reason = "body_timeout";
    const rate = limits.bodyMinRate ?? 0;
    if (rate <= 0) return;
    const allowed = (limits.bodyMinRateAfterMs ?? 0) + this.bodyBytes * 1000 / rate -
      this.bodyWaited;
    if (now + allowed < this.deadline) {
      this.deadline = now + Math.max(0, allowed);
      this.reason = "body_rate";
    }
  }
}
