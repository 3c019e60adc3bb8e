/**
 * A front's connection piped over loopback into the private `Deno.serve` listener (all of them
 * without the own server; with it, what that server hands over: upgrades, HTTP/2, CONNECT). The
 * request framing of the bytes going by is followed (`http1_framing.ts`, and `h2_framing.ts`
 * after an HTTP/2 preface) so that the deadline matches what the client is doing; bad chunked
 * framing is answered 400 by the front (the server behind would only close). On a connection
 * the own server handed over, every HTTP/1.1 request head is checked as the own server checks
 * one before it is forwarded (`head_gate.ts`).
 */
import { type ConnRead, connReader } from "./conn_read.ts";
import type { CloseReason, FrontConnection, FrontContext } from "./front_conn.ts";
import { Http2Framing } from "./h2_framing.ts";
import { HeadGate } from "./head_gate.ts";

const BAD_FRAMING = new TextEncoder().encode(
  "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n" +
    "connection: close\r\ncontent-length: 36\r\n\r\nBad Request: invalid chunked framing",
);
/** The own server's answer to a head it refuses. */
const BAD_REQUEST = new TextEncoder().encode(
  "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
);
const BUFFER = 64 * 1024;
const EMPTY = new Uint8Array(0);

/**
 * Pipes `c` into the private listener, starting with `pending` (what the own server read of a
 * request it hands over: its heads are checked from then on); resolves when the connection is
 * done.
 */
export async function pipe(
  front: FrontContext,
  c: FrontConnection,
  clientPort: number,
  pending?: Uint8Array,
): Promise<void> {
  c.piped = true;
  front.piped(c);
  let inner: Deno.Conn;
  try {
    inner = await Deno.connect({ hostname: "127.0.0.1", port: front.innerPort });
  } catch {
    front.stats.refused.fd_limit++;
    return front.end(c);
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
  front.peers.set(innerPort, { hostname: c.address, port: clientPort, conn: c });
  if (pending !== undefined) {
    c.gate = new HeadGate();
    if (!(await forward(front, c, inner, pending))) {
      front.peers.delete(innerPort);
      return;
    }
  }
  // The server's end decides: when it closes, the client's connection goes too (the client
  // finishing first only half-closes the pipe, the answer may still come).
  inbound(front, c, inner).catch(() => front.end(c));
  try {
    await outbound(front, c, inner);
  } finally {
    front.peers.delete(innerPort);
    front.end(c);
  }
}

/** Client to server: follows the framing, moves the deadline, answers bad framing. */
async function inbound(front: FrontContext, c: FrontConnection, inner: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(BUFFER);
  const read = connReader(c.client);
  while (!c.closed) {
    const n = await readOrEnd(read, buf);
    if (n === null) {
      // The client finished sending: the server may still answer.
      await inner.closeWrite().catch(() => {});
      return;
    }
    if (!(await forward(front, c, inner, buf.subarray(0, n)))) return;
  }
}

/**
 * Follows and forwards the client's `chunk`; on a checked connection (`c.gate`) each request
 * head is held until whole and checked first. False when the connection ended (bad framing, a
 * refused head).
 */
async function forward(
  front: FrontContext,
  c: FrontConnection,
  inner: Deno.Conn,
  chunk: Uint8Array,
): Promise<boolean> {
  const gate = c.gate;
  const f = c.framing;
  while (chunk.length > 0 && !c.closed) {
    let piece = chunk;
    chunk = EMPTY;
    const http1 = c.h2 === undefined && f.phase !== "tunnel";
    if (gate !== undefined && http1 && f.phase !== "body") {
      const r = gate.take(piece);
      if (r.kind === "wait") {
        if (r.began) {
          c.deadline = front.now + front.limits.headerTimeoutMs;
          c.reason = "header_timeout";
        }
        return true;
      }
      if (r.kind === "refuse") {
        await refused(front, c, r.reason, r.request);
        return false;
      }
      piece = r.head;
      chunk = r.rest;
    } else if (gate !== undefined && !http1 && gate.held > 0) {
      // Bytes held when the connection stopped being HTTP/1.1 (sent before the 101) go first.
      piece = concat(gate.flush(), piece);
    }
    const taken = await pass(front, c, inner, piece, gate !== undefined && http1);
    if (taken < 0) return false;
    if (taken < piece.length) chunk = concat(piece.subarray(taken), chunk);
  }
  return true;
}

/**
 * Follows `piece` and pushes it to the server, or with `stopAtHead` only what of it belongs to
 * the request in progress; the bytes pushed, -1 when the framing broke (answered 400).
 */
async function pass(
  front: FrontContext,
  c: FrontConnection,
  inner: Deno.Conn,
  piece: Uint8Array,
  stopAtHead: boolean,
): Promise<number> {
  const f = c.framing;
  const inBody = f.phase === "body";
  let take = piece.length;
  if (c.h2 !== undefined) {
    c.h2.fromClient(piece, front.now);
    http2Deadline(front, c, c.h2);
  } else if (f.phase !== "tunnel") {
    if (!f.feed(piece, stopAtHead)) {
      await badFraming(front, c);
      return -1;
    }
    if (f.stoppedAt >= 0) take = f.stoppedAt;
    followed(front, c, piece.subarray(0, take), inBody);
  } else followed(front, c, piece, inBody);
  c.pushing = true;
  try {
    await writeAll(inner, take === piece.length ? piece : piece.subarray(0, take));
  } finally {
    c.pushing = false;
  }
  // The body waits for the client again from when the server took these bytes.
  if (c.h2 === undefined && f.phase === "body") c.awaitBody(front.now, front.limits);
  return take;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (b.length === 0) return a;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** A head the own parser refuses: answered 400 as the own server answers it, nothing forwarded. */
async function refused(
  front: FrontContext,
  c: FrontConnection,
  reason: string,
  request: { method: string; target: string; head: string } | undefined,
): Promise<void> {
  // Answers still due to earlier requests are cut off: the 400 must not go out inside one.
  c.inner?.close();
  c.inner = undefined;
  await writeAll(c.client, BAD_REQUEST).catch(() => {});
  if (request !== undefined) front.recordBroken(c, { ...request, reason });
  front.end(c);
}

/**
 * The deadline for where the HTTP/1.1 framing is after `chunk` (`inBody`: it came inside a
 * body, whose rate it counts toward).
 */
function followed(
  front: FrontContext,
  c: FrontConnection,
  chunk: Uint8Array,
  inBody: boolean,
): void {
  const f = c.framing;
  const { limits, now } = front;
  switch (f.phase) {
    case "head":
      if (f.heads !== c.heads) {
        c.heads = f.heads;
        c.deadline = now + limits.headerTimeoutMs;
        c.reason = "header_timeout";
      }
      break;
    case "body":
      // A body that begins in this chunk counts from here; one that goes on, these bytes.
      if (inBody) c.bodyArrived(chunk.length, now);
      else c.bodyBegins();
      c.awaitBody(now, limits);
      break;
    case "idle":
      // The request is complete: the answer is the server's (and the site's deadline).
      c.deadline = Infinity;
      c.reason = "keepalive_timeout";
      break;
    case "tunnel":
      if (f.h2) http2(front, c, chunk.subarray(f.tunnelAt));
      else if (f.unframed) unframed(front, c);
      else c.deadline = Infinity;
      break;
  }
}

/**
 * A head the follower cannot frame: the server refuses it and closes; should it answer after
 * all, the connection ends at the head's deadline (the follower cannot tell the next request).
 */
function unframed(front: FrontContext, c: FrontConnection): void {
  c.deadline = Math.min(c.deadline, front.now + front.limits.headerTimeoutMs);
  c.reason = "header_timeout";
}

/** Server to client: the answer's bytes restart the keep-alive deadline. */
async function outbound(front: FrontContext, c: FrontConnection, inner: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(BUFFER);
  const f = c.framing;
  const read = connReader(inner);
  while (!c.closed) {
    const n = await readOrEnd(read, buf);
    if (n === null) return;
    const chunk = buf.subarray(0, n);
    if (f.upgradeAsked) f.answered(chunk);
    c.sendingSince = front.now || 1;
    try {
      await writeAll(c.client, chunk);
    } finally {
      c.sendingSince = 0;
    }
    if (c.h2 !== undefined) {
      // After the write: an answer's end the client is slow to take is not idle time.
      c.h2.fromServer(chunk, front.now);
      http2Deadline(front, c, c.h2);
    } else if (f.phase === "idle") {
      c.deadline = front.now + front.limits.keepAliveTimeoutMs;
      c.reason = "keepalive_timeout";
    }
  }
}

/** The client sent the HTTP/2 preface; `rest` is what came after it in the same chunk. */
function http2(front: FrontContext, c: FrontConnection, rest: Uint8Array): void {
  if (c.framing.heads !== 1) {
    // Not at the connection's start: HTTP/1.1 for the server, which refuses it; later bytes
    // do not move the deadline.
    c.deadline = Math.min(c.deadline, front.now + front.limits.headerTimeoutMs);
    c.reason = "header_timeout";
    return;
  }
  c.h2 = new Http2Framing();
  c.h2.fromClient(rest, front.now);
  http2Deadline(front, c, c.h2);
}

/** The earliest of the deadlines that apply to where the HTTP/2 connection is. */
function http2Deadline(front: FrontContext, c: FrontConnection, h: Http2Framing): void {
  const limits = front.limits;
  let deadline = Infinity;
  let reason: CloseReason = "keepalive_timeout";
  const body = h.bodySince;
  if (body >= 0) {
    deadline = body + limits.bodyTimeoutMs;
    reason = "body_timeout";
  }
  const due = h.bodyRateDue(limits.bodyMinRate ?? 0, limits.bodyMinRateAfterMs ?? 0);
  if (due >= 0 && due < deadline) {
    deadline = due;
    reason = "body_rate";
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

async function badFraming(front: FrontContext, c: FrontConnection): Promise<void> {
  front.stats.closed.bad_framing++;
  const broken = c.framing.broken!;
  // The server behind has the head and part of the body: cut it off before it answers, and
  // answer ourselves (it would only close the connection).
  c.inner?.close();
  c.inner = undefined;
  await writeAll(c.client, BAD_FRAMING).catch(() => {});
  front.recordBroken(c, broken);
  front.end(c);
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

export async function writeAll(conn: Deno.Conn, chunk: Uint8Array): Promise<void> {
  let at = 0;
  while (at < chunk.length) at += await conn.write(chunk.subarray(at));
}
