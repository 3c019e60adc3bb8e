/**
 * One connection of the upstream HTTP/1.1 client: its socket, read buffer, the state of the
 * request it carries and its pool bookkeeping. It is its own deadline (deadlines.ts), armed per
 * request, so nothing is allocated for one. And the dial that opens one within the connect
 * deadline.
 */
import { type ConnRead, connReader } from "../conn_read.ts";
import type { Deadline, Deadlines } from "./deadlines.ts";
import type { UpstreamOrigin } from "./upstream_client.ts";

const READ_SIZE = 16 * 1024;
const ignore = () => {};

/** A deadline passed: `what` the upstream did not do in time. */
export function timeoutError(what: string): DOMException {
  return new DOMException(`The upstream did not ${what} in time`, "TimeoutError");
}

/** One upstream connection: its socket, read buffer and pool bookkeeping. */
export class Connection implements Deadline {
  buf: Uint8Array<ArrayBuffer> = new Uint8Array(READ_SIZE);
  start = 0;
  end = 0;
  /** The current request's streamed body's declared length, -1 when it goes chunked. */
  sendLength = -1;
  /** The current request's body (bytes) went into {@link out} after the head. */
  bodyInline = false;
  /** A read started while idle; the next {@link read} takes its result. */
  pending: Promise<number | null> | undefined = undefined;
  idle = false;
  idleSince = 0;
  closed = false;
  /** Served a request before (a failure before any answer may be the upstream's idle close). */
  reused = false;
  timedOut = false;
  /** The current request's body has been written completely. */
  bodyDone = true;
  /** Why the current request's body could not be sent (the client's stream failed). */
  bodyFailure: unknown = undefined;
  /** Outgoing bytes for the head (and a small buffered body); grown when needed. */
  out = new Uint8Array(4096);
  /** Ends an idle connection whose pending read completed (made at its first idle time). */
  onIdleRead: (() => void) | undefined = undefined;
  /** Some byte of the current response arrived (a reused connection that failed before is stale). */
  seen = false;
  /** The connection is its own deadline (deadlines.ts): armed per request, nothing allocated. */
  at = 0;
  slot = -1;

  /** What an expired deadline does: closes the connection, which ends the read waiting on it. */
  onExpire(): void {
    this.timedOut = true;
    this.close();
  }

  /** `conn`'s reads, without the old-generation garbage of `conn.read` (net/conn_read.ts). */
  readonly readInto: ConnRead;

  constructor(readonly conn: Deno.Conn, readonly origin: string) {
    this.readInto = connReader(conn);
  }

  /** Reads more bytes after `end`; false at the end of the stream. */
  async fill(): Promise<boolean> {
    const n = await this.read();
    if (n === null) return false;
    this.end += n;
    return true;
  }

  /**
   * Starts reading after `end` (the read started while idle, if any); the caller adds what came
   * to `end`. Not `async`: the response head's loop awaits it without a frame of its own.
   */
  read(): Promise<number | null> {
    if (this.start === this.end) {
      this.start = 0;
      this.end = 0;
    } else if (this.end === this.buf.length) {
      if (this.start > 0) {
        this.buf.copyWithin(0, this.start, this.end);
        this.end -= this.start;
        this.start = 0;
      } else {
        const grown = new Uint8Array(this.buf.length * 2);
        grown.set(this.buf);
        this.buf = grown;
      }
    }
    const read = this.pending ?? this.readInto(this.buf.subarray(this.end));
    this.pending = undefined;
    return read;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.conn.close();
    } catch {
      // already closed by the runtime
    }
  }
}

export async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let at = 0;
  while (at < data.length) at += await conn.write(data.subarray(at));
}

/**
 * Opens a connection to `upstream` (TLS for `https:`, verified against the system's and
 * `caCerts`); rejects with a timeout when it takes longer than `ms`. TCP connects take a signal,
 * so a dial into a black hole stops at the deadline; a TLS connection that arrives after its
 * deadline is closed on arrival.
 */
export async function dial(
  upstream: UpstreamOrigin,
  ms: number,
  deadlines: Deadlines,
  caCerts: string[] | undefined,
): Promise<Connection> {
  const tls = upstream.origin.startsWith("https:");
  let expired = false;
  let deadline: Deadline | undefined;
  const ac = tls ? undefined : new AbortController();
  const dialing: Promise<Deno.Conn> = tls
    ? Deno.connectTls({
      hostname: upstream.hostname,
      port: upstream.port,
      caCerts,
      alpnProtocols: ["http/1.1"],
    })
    : Deno.connect({ hostname: upstream.hostname, port: upstream.port, signal: ac!.signal });
  const timeout = new Promise<never>((_, reject) => {
    deadline = deadlines.start(ms, () => {
      expired = true;
      reject(timeoutError("accept the connection"));
      ac?.abort();
    });
  });
  dialing.then((conn) => {
    if (expired) conn.close();
  }, ignore);
  try {
    const conn = await Promise.race([dialing, timeout]);
    if (!tls) (conn as Deno.TcpConn).setNoDelay(true);
    return new Connection(conn, upstream.origin);
  } finally {
    deadlines.clear(deadline!);
  }
}
