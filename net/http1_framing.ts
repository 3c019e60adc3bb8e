/**
 * Follows the request framing of one HTTP/1.1 connection as its bytes go by, without buffering
 * them: where a request head ends, how long its body is (Content-Length, or chunked framing
 * checked as strictly as the server behind it checks it), and when the connection stops being
 * HTTP/1.1 (an HTTP/2 preface, CONNECT, or an upgrade the server accepted). The connection front
 * (`conn_front.ts`) sets its deadlines from the phase and answers bad chunked framing itself; after
 * an HTTP/2 preface it follows the frames (`h2_framing.ts`).
 */

/** Where the connection is: between requests, in a head, in a body, or no longer HTTP/1.1. */
export type Phase = "idle" | "head" | "body" | "tunnel";

/** The request whose framing broke, for the access-log record. */
export interface BrokenRequest {
  readonly method: string;
  readonly target: string;
  readonly head: string;
  readonly reason: string;
}

/** Longest head kept for parsing; a longer one is the server's to refuse (431). */
const HEAD_CAP = 64 * 1024;
/** Longest chunk-size line (with extensions) and trailer section accepted. */
const EXT_CAP = 4096;
const TRAILER_CAP = 8 * 1024;

const CR = 13;
const LF = 10;
const SP = 32;
const HTAB = 9;
const SEMI = 59;

// Chunked states.
const C_SIZE_START = 0;
const C_SIZE = 1;
const C_LWS = 2;
const C_EXT = 3;
const C_SIZE_LF = 4;
const C_DATA = 5;
const C_DATA_CR = 6;
const C_DATA_LF = 7;
const C_TRAILER_START = 8;
const C_TRAILER = 9;
const C_TRAILER_LF = 10;
const C_END_LF = 11;

const latin1 = new TextDecoder("latin1");
/** The HTTP/2 preface's first 18 bytes, as the head they end (RFC 9113 §3.4). */
const PREFACE_HEAD = "PRI * HTTP/2.0\r\n\r\n";
const FIELDS = /\n(content-length|transfer-encoding|upgrade)[ \t]*:[ \t]*([^\r\n]*)/gi;

function hexValue(b: number): number {
  if (b >= 48 && b <= 57) return b - 48;
  if (b >= 97 && b <= 102) return b - 87;
  if (b >= 65 && b <= 70) return b - 55;
  return -1;
}

export class RequestFraming {
  phase: Phase = "idle";
  /** Heads begun so far (the front restarts the head deadline when it grows). */
  heads = 0;
  /** Set while a request asked to upgrade; the server's 101 turns the connection into a tunnel. */
  upgradeAsked = false;
  /** The request whose framing was invalid, once `feed` returned false. */
  broken: BrokenRequest | undefined;
  /** The tunnel began with the HTTP/2 preface (`PRI * HTTP/2.0`). */
  h2 = false;
  /**
   * The following stopped at a head it cannot frame (longer than 64 KiB, a Transfer-Encoding
   * without chunked last, a bad Content-Length): the server refuses such a request and closes,
   * and the front keeps the head's deadline, so a head the server takes after all (Deno.serve
   * takes a few bytes past 64 KiB) cannot leave a connection without one.
   */
  unframed = false;
  /** Where, in the chunk last fed, the tunnel's bytes begin (once `phase` became "tunnel"). */
  tunnelAt = 0;
  /** Where, in the chunk last fed with `stopAtHead`, the next request begins; -1: not in it. */
  stoppedAt = -1;
  #head = new Uint8Array(1024);
  #headLen = 0;
  #headOverflow = false;
  #remaining = 0;
  #chunked = false;
  /** The request asking for an upgrade is a CONNECT (a 2xx answer makes the tunnel). */
  #connect = false;
  /** The first bytes of the server's answer, up to its status code. */
  readonly #status = new Uint8Array(12);
  #statusLen = 0;
  readonly #chunker = new ChunkedFraming();
  #method = "";
  #target = "";
  #headText = "";

  /**
   * Follows the client's bytes; false when the request's framing is invalid. With `stopAtHead`
   * it stops where the next request begins after the bytes it took (`stoppedAt`), so that the
   * caller can check that head before it goes on.
   */
  feed(buf: Uint8Array, stopAtHead = false): boolean {
    let i = 0;
    const n = buf.length;
    this.stoppedAt = -1;
    while (i < n) {
      switch (this.phase) {
        case "tunnel":
          return true;
        case "idle":
          if (stopAtHead && i > 0) {
            this.stoppedAt = i;
            return true;
          }
          this.phase = "head";
          this.heads++;
          this.#headLen = 0;
          this.#headOverflow = false;
          continue;
        case "head": {
          const end = this.#scanHead(buf, i);
          if (end < 0) return true;
          i = end;
          this.#startBody();
          // `#startBody` may have changed the phase.
          if ((this.phase as Phase) === "tunnel") this.tunnelAt = i;
          break;
        }
        case "body":
          i = this.#chunked ? this.#chunks(buf, i) : this.#counted(buf, i);
          if (i < 0) return false;
          break;
      }
    }
    return true;
  }

  /**
   * The server's bytes: a 101 to an upgrade request (a 2xx to a CONNECT) makes the connection a
   * tunnel. Only the connection's first request may ask, so that its answer is the server's first
   * bytes: a later one's answer starts wherever the answers before it end, which this follower
   * does not track, and any earlier answer's bytes (a body the client chose) read as "101" there
   * made a tunnel, with no deadline and no framing followed any more.
   */
  answered(buf: Uint8Array): void {
    if (!this.upgradeAsked) return;
    const take = Math.min(12 - this.#statusLen, buf.length);
    this.#status.set(buf.subarray(0, take), this.#statusLen);
    this.#statusLen += take;
    if (this.#statusLen < 12) return;
    this.upgradeAsked = false;
    const b = this.#status;
    // "HTTP/1.1 101", or "HTTP/1.1 2xx" to a CONNECT.
    const tunnel = this.#connect ? b[9] === 50 : b[9] === 49 && b[10] === 48 && b[11] === 49;
    this.#connect = false;
    if (tunnel) this.phase = "tunnel";
  }

  /** Copies head bytes until the blank line; the index after it, or -1 when not there yet. */
  #scanHead(buf: Uint8Array, from: number): number {
    let p = buf.indexOf(LF, from);
    while (p >= 0) {
      // The byte before this LF, and the one before that, across the chunk boundary.
      const prev = p - 1 >= from ? buf[p - 1] : this.#headByte(p - 1 - from);
      const prev2 = p - 2 >= from ? buf[p - 2] : this.#headByte(p - 2 - from);
      if (prev === LF || (prev === CR && prev2 === LF)) {
        this.#keep(buf, from, p + 1);
        return p + 1;
      }
      p = buf.indexOf(LF, p + 1);
    }
    this.#keep(buf, from, buf.length);
    return -1;
  }

  /** A kept head byte counted back from the end (`back` is -1 for the last one). */
  #headByte(back: number): number | undefined {
    const at = this.#headLen + back;
    return at >= 0 && !this.#headOverflow ? this.#head[at] : undefined;
  }

  #keep(buf: Uint8Array, from: number, to: number): void {
    if (this.#headOverflow) return;
    const len = to - from;
    if (this.#headLen + len > HEAD_CAP) {
      this.#headOverflow = true;
      return;
    }
    if (this.#headLen + len > this.#head.length) {
      const grown = new Uint8Array(
        Math.min(HEAD_CAP, Math.max(this.#head.length * 2, this.#headLen + len)),
      );
      grown.set(this.#head.subarray(0, this.#headLen));
      this.#head = grown;
    }
    this.#head.set(buf.subarray(from, to), this.#headLen);
    this.#headLen += len;
  }

  /** The head is complete: decide how the body is framed. */
  #startBody(): void {
    if (this.#headOverflow) return this.#unframed();
    const text = latin1.decode(this.#head.subarray(0, this.#headLen));
    this.#headText = text;
    const sp = text.indexOf(" ");
    this.#method = text.slice(0, sp < 0 ? 0 : sp);
    const sp2 = text.indexOf(" ", sp + 1);
    this.#target = sp < 0 ? "" : text.slice(sp + 1, sp2 < 0 ? undefined : sp2);
    if (text === PREFACE_HEAD) {
      // Only the preface's exact bytes (what `Deno.serve` takes for HTTP/2): any other PRI
      // request is HTTP/1.1 to the server, and following its body as frames would let the body
      // fake an open request that no deadline applies to.
      this.h2 = true;
      this.phase = "tunnel";
      return;
    }
    if (this.#method === "CONNECT") {
      // A request without a body until a 2xx answer makes it a tunnel (`answered`): refused, the
      // connection is followed on (a tunnel has no deadline, so it must not start before).
      if (this.heads === 1) this.upgradeAsked = this.#connect = true;
      this.phase = "idle";
      return;
    }
    let te: string | undefined;
    let cl: string | undefined;
    let clConflict = false;
    let upgrade = false;
    FIELDS.lastIndex = 0;
    for (let m = FIELDS.exec(text); m !== null; m = FIELDS.exec(text)) {
      const name = m[1]!.toLowerCase();
      const value = m[2]!.trim();
      if (name === "transfer-encoding") te = te === undefined ? value : `${te}, ${value}`;
      else if (name === "content-length") {
        if (cl !== undefined && cl !== value) clConflict = true;
        cl = value;
      } else upgrade = true;
    }
    // A later request's upgrade is answered by the server all the same; the connection stays
    // followed as HTTP/1.1 (`answered`), and the first request's ask stands until its answer.
    if (this.heads === 1) this.upgradeAsked = upgrade;
    this.#chunked = false;
    if (te !== undefined) {
      const codings = te.toLowerCase().split(",");
      // Not framed by chunks: the server refuses it; follow nothing more.
      if (codings[codings.length - 1]!.trim() !== "chunked") return this.#unframed();
      this.#chunked = true;
      this.#chunker.reset();
      this.phase = "body";
      return;
    }
    if (cl !== undefined) {
      if (clConflict || !/^\d{1,15}$/.test(cl)) return this.#unframed();
      this.#remaining = Number(cl);
      this.phase = this.#remaining > 0 ? "body" : "idle";
      return;
    }
    this.phase = "idle";
  }

  #unframed(): void {
    this.unframed = true;
    this.phase = "tunnel";
  }

  #counted(buf: Uint8Array, i: number): number {
    const take = Math.min(this.#remaining, buf.length - i);
    this.#remaining -= take;
    if (this.#remaining === 0) this.phase = "idle";
    return i + take;
  }

  #bad(reason: string): number {
    this.broken = { method: this.#method, target: this.#target, head: this.#headText, reason };
    this.phase = "tunnel";
    return -1;
  }

  /** Chunked framing; -1 when it is invalid. */
  #chunks(buf: Uint8Array, i: number): number {
    const c = this.#chunker;
    const at = c.feed(buf, i, buf.length);
    if (at < 0) return this.#bad(c.reason!);
    if (c.done) this.phase = "idle";
    return at;
  }
}

/**
 * Chunked framing (RFC 9112 §7.1) checked byte by byte except the data, as strictly as hyper:
 * hex sizes of at most 13 digits, optional whitespace, extensions up to 4 KiB without a bare
 * LF, CRLF after every line and after the data, trailers up to 8 KiB. Shared by the connection
 * front (which follows the bytes it pipes) and the own HTTP/1.1 server (which also takes the
 * data out).
 */
export class ChunkedFraming {
  /** The last chunk and the trailers have been read. */
  done = false;
  /** Why the framing is invalid, once `feed` returned -1. */
  reason: string | undefined;
  #cstate = C_SIZE_START;
  #remaining = 0;
  #digits = 0;
  #lineLen = 0;

  reset(): void {
    this.done = false;
    this.reason = undefined;
    this.#cstate = C_SIZE_START;
    this.#remaining = 0;
    this.#digits = 0;
    this.#lineLen = 0;
  }

  #fail(reason: string): number {
    this.reason = reason;
    return -1;
  }

  /**
   * Follows `buf[i, n)`: the index where it stopped (after the body's last byte once
   * {@link done}), or -1 when the framing is invalid ({@link reason} says why). With `data`, the
   * chunk data found is pushed as `[start, end)` index pairs into `buf`.
   */
  feed(buf: Uint8Array, i: number, n: number, data?: number[]): number {
    while (i < n) {
      const b = buf[i]!;
      switch (this.#cstate) {
        case C_SIZE_START: {
          const h = hexValue(b);
          if (h < 0) return this.#fail("chunk size missing");
          this.#remaining = h;
          this.#digits = 1;
          this.#cstate = C_SIZE;
          break;
        }
        case C_SIZE: {
          const h = hexValue(b);
          if (h >= 0) {
            if (++this.#digits > 13) return this.#fail("chunk size too large");
            this.#remaining = this.#remaining * 16 + h;
          } else if (b === SP || b === HTAB) this.#cstate = C_LWS;
          else if (b === SEMI) {
            this.#cstate = C_EXT;
            this.#lineLen = 0;
          } else if (b === CR) this.#cstate = C_SIZE_LF;
          else return this.#fail("invalid chunk size line");
          break;
        }
        case C_LWS:
          if (b === SEMI) {
            this.#cstate = C_EXT;
            this.#lineLen = 0;
          } else if (b === CR) this.#cstate = C_SIZE_LF;
          else if (b !== SP && b !== HTAB) return this.#fail("invalid chunk size line");
          break;
        case C_EXT:
          if (b === CR) this.#cstate = C_SIZE_LF;
          else if (b === LF) return this.#fail("newline in a chunk extension");
          else if (++this.#lineLen > EXT_CAP) return this.#fail("chunk extension too long");
          break;
        case C_SIZE_LF:
          if (b !== LF) return this.#fail("chunk size line not ended by CRLF");
          if (this.#remaining === 0) {
            this.#cstate = C_TRAILER_START;
            this.#lineLen = 0;
          } else this.#cstate = C_DATA;
          break;
        case C_DATA: {
          const take = Math.min(this.#remaining, n - i);
          if (data !== undefined && take > 0) data.push(i, i + take);
          this.#remaining -= take;
          i += take;
          if (this.#remaining === 0) this.#cstate = C_DATA_CR;
          continue;
        }
        case C_DATA_CR:
          if (b !== CR) return this.#fail("chunk data longer than its size");
          this.#cstate = C_DATA_LF;
          break;
        case C_DATA_LF:
          if (b !== LF) return this.#fail("chunk data not ended by CRLF");
          this.#cstate = C_SIZE_START;
          break;
        case C_TRAILER_START:
          if (b === CR) this.#cstate = C_END_LF;
          else if (b === LF) return this.#fail("bare LF in the trailer section");
          else this.#cstate = C_TRAILER;
          if (++this.#lineLen > TRAILER_CAP) return this.#fail("trailer section too large");
          break;
        case C_TRAILER:
          // A bare LF would end the line for some readers and not for others.
          if (b === CR) this.#cstate = C_TRAILER_LF;
          else if (b === LF) return this.#fail("bare LF in the trailer section");
          if (++this.#lineLen > TRAILER_CAP) return this.#fail("trailer section too large");
          break;
        case C_TRAILER_LF:
          if (b !== LF) return this.#fail("trailer line not ended by CRLF");
          this.#cstate = C_TRAILER_START;
          break;
        case C_END_LF:
          if (b !== LF) return this.#fail("chunked body not ended by CRLF");
          this.done = true;
          return i + 1;
      }
      i++;
    }
    return i;
  }
}
