/**
 * One connection of a connection front (`conn_front.ts`), what its handling needs of the front
 * (the limits, counters, coarse clock and the way to end it), and the shapes the front shares
 * with its callers: the limits it applies and the counters it writes.
 */
import type { Http2Framing } from "./h2_framing.ts";
import { type BrokenRequest, RequestFraming } from "./http1_framing.ts";

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
}

/** One admitted connection: its framing followed, its deadline and what it is doing. */
export class FrontConnection {
  /** The pipe into the private listener, once piped. */
  inner: Deno.Conn | undefined = undefined;
  readonly framing = new RequestFraming();
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
  /** Counted toward its address's per-client cap (not once it carried a long-lived feed). */
  perClient = true;

  constructor(
    readonly client: Deno.Conn,
    /** The client's address (IPv4-mapped IPv6 as plain IPv4) and source port. */
    readonly address: string,
    readonly clientPort: number,
    /** When the connection was admitted; its first head is due `headerTimeoutMs` after. */
    readonly opened: number,
  ) {
    this.deadline = Infinity;
  }
}
