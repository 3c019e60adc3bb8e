/**
 * Follows one HTTP/2 connection as its bytes go by in both directions, reading frame headers
 * (RFC 9113 §4.1: 24-bit length, type, flags, 31-bit stream id) and, of the payloads, only the
 * flow-control ones (SETTINGS, WINDOW_UPDATE); every other payload is skipped unread. It tells
 * which requests are open, whether the client is in the middle of a header block, since when a
 * request body the server has room for has not moved, and since when an answer has been held
 * back by the client's own flow control (it grants no room to receive). The connection front (`conn_front.ts`)
 * sets its deadlines from that, as it does from `conn_framing.ts` for HTTP/1.1; the protocol
 * itself stays the server's to check.
 *
 * A request is open from the end of its HEADERS block (client) until the server ends its answer
 * (END_STREAM on HEADERS or DATA) or either side resets the stream (RST_STREAM). The rest of the
 * client's body after the answer is not waited for: the answer is complete for the client.
 */

const DATA = 0x0;
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const WINDOW_UPDATE = 0x8;
const CONTINUATION = 0x9;
const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const INITIAL_WINDOW_SIZE = 0x4;
/** Every flow-control window's size until SETTINGS or WINDOW_UPDATE says otherwise. */
const DEFAULT_WINDOW = 65_535;
/** SETTINGS payload read (682 entries); what a longer frame carries past it is not followed. */
const KEEP_CAP = 4096;

/** What the client sends after `PRI * HTTP/2.0\r\n\r\n` (already read by the HTTP/1.1 follower). */
const PREFACE_REST = [0x53, 0x4d, 0x0d, 0x0a, 0x0d, 0x0a]; // "SM\r\n\r\n"

/** What a direction's frames are handed to. */
interface FrameSink {
  /** A frame header is complete (its fields are on the reader). */
  header(reader: FrameReader): void;
  /** `n` payload bytes of the current frame went by. */
  payload(reader: FrameReader, n: number): void;
  /** The current frame is complete; `kept` holds its payload for SETTINGS and WINDOW_UPDATE. */
  end(reader: FrameReader, kept: Uint8Array): void;
}

/** One direction's frames: headers read, flow-control payloads kept, the rest skipped. */
class FrameReader {
  type = -1;
  flags = 0;
  stream = 0;
  length = 0;
  readonly #head = new Uint8Array(9);
  #have = 0;
  /** Payload bytes of the current frame still to come. */
  #skip = 0;
  readonly #kept = new Uint8Array(KEEP_CAP);
  #keptLen = 0;
  #keep = false;

  constructor(readonly sink: FrameSink) {}

  walk(buf: Uint8Array, from: number): void {
    let i = from;
    const n = buf.length;
    while (i < n) {
      if (this.#skip > 0) {
        const take = Math.min(this.#skip, n - i);
        if (this.#keep && this.#keptLen < KEEP_CAP) {
          const room = Math.min(take, KEEP_CAP - this.#keptLen);
          this.#kept.set(buf.subarray(i, i + room), this.#keptLen);
          this.#keptLen += room;
        }
        this.#skip -= take;
        i += take;
        this.sink.payload(this, take);
        if (this.#skip === 0) this.#end();
        continue;
      }
      const take = Math.min(9 - this.#have, n - i);
      this.#head.set(buf.subarray(i, i + take), this.#have);
      this.#have += take;
      i += take;
      if (this.#have < 9) return;
      this.#have = 0;
      const h = this.#head;
      this.length = (h[0]! << 16) | (h[1]! << 8) | h[2]!;
      this.type = h[3]!;
      this.flags = h[4]!;
      this.stream = ((h[5]! & 0x7f) << 24) | (h[6]! << 16) | (h[7]! << 8) | h[8]!;
      this.#skip = this.length;
      this.#keep = this.type === SETTINGS || this.type === WINDOW_UPDATE;
      this.#keptLen = 0;
      this.sink.header(this);
      if (this.#skip === 0) this.#end();
    }
  }

  #end(): void {
    this.sink.end(this, this.#kept.subarray(0, this.#keptLen));
  }
}

/** An open request. */
interface Stream {
  /** The client ended its side (END_STREAM): no more body to wait for. */
  sent: boolean;
  /** What the client may still send on it: the server's grant, less the DATA sent. */
  window: number;
  /** When its body last moved, or the server made room for it (the body deadline runs from it). */
  since: number;
  /** What the server may still send on it: the client's grant, less the DATA answered. */
  answerWindow: number;
  /** When the client's grant for it ran out; -1 while it has room. */
  heldSince: number;
}

export class Http2Framing {
  /** Header blocks that opened a request so far. */
  requests = 0;
  /** When the client's header block in progress began (its HEADERS frame header); -1: none. */
  blockSince = -1;
  /** When the last open request ended (the connection became idle); -1: never. */
  idleSince = -1;
  /** The client's bytes are not HTTP/2 (a bad preface): nothing more is followed. */
  broken = false;
  readonly #streams = new Map<number, Stream>();
  #preface = 0;
  #highest = 0;
  #blockStream = 0;
  #blockEnds = false;
  /** The server's SETTINGS_INITIAL_WINDOW_SIZE: a new stream's window for the client's DATA. */
  #initial = DEFAULT_WINDOW;
  /** The connection's window for the client's DATA, and when it last opened. */
  #window = DEFAULT_WINDOW;
  #windowSince = 0;
  /** The client's SETTINGS_INITIAL_WINDOW_SIZE, and the connection's window for the answers. */
  #answerInitial = DEFAULT_WINDOW;
  #answerWindow = DEFAULT_WINDOW;
  /** When the connection's window for the answers ran out; -1 while it has room. */
  #answerHeldSince = -1;
  #now = 0;

  readonly #client = new FrameReader({
    header: (r) => this.#clientHeader(r),
    payload: (r, n) => {
      const s = r.type === DATA && n > 0 ? this.#streams.get(r.stream) : undefined;
      if (s !== undefined) s.since = this.#now;
    },
    end: (r, kept) => this.#clientEnd(r, kept),
  });

  readonly #server = new FrameReader({
    header: (r) => {
      if (r.type === DATA) this.#answered(r.stream, r.length);
      if (
        r.type === RST_STREAM || ((r.type === HEADERS || r.type === DATA) && r.flags & END_STREAM)
      ) this.#end(r.stream);
    },
    payload: noop,
    end: (r, kept) => this.#serverEnd(r, kept),
  });

  /** Requests open (answer not ended, stream not reset). */
  get open(): number {
    return this.#streams.size;
  }

  /**
   * Since when the oldest request body the server has room for has not moved (the body deadline
   * runs from it); -1 when no body is awaited or the server has no room for one.
   */
  get bodySince(): number {
    if (this.#window <= 0) return -1;
    let since = -1;
    for (const s of this.#streams.values()) {
      if (s.sent || s.window <= 0) continue;
      const t = Math.max(s.since, this.#windowSince);
      if (since < 0 || t < since) since = t;
    }
    return since;
  }

  /**
   * Since when an open answer has been held back by the client's flow control (its window, or
   * the connection's, used up by the server's DATA); -1 when none is.
   */
  get answerHeldSince(): number {
    let since = -1;
    for (const s of this.#streams.values()) {
      const t = s.heldSince >= 0 ? s.heldSince : this.#answerHeldSince;
      if (t >= 0 && (since < 0 || t < since)) since = t;
    }
    return since;
  }

  /** The client's bytes, from just after `PRI * HTTP/2.0\r\n\r\n`; `now` stamps what happens. */
  fromClient(buf: Uint8Array, now: number): void {
    if (this.broken) return;
    let i = 0;
    while (this.#preface < PREFACE_REST.length && i < buf.length) {
      if (buf[i++] !== PREFACE_REST[this.#preface++]) {
        this.broken = true;
        return;
      }
    }
    this.#now = now;
    this.#client.walk(buf, i);
  }

  /** The server's bytes, from the start of its side of the connection. */
  fromServer(buf: Uint8Array, now: number): void {
    this.#now = now;
    this.#server.walk(buf, 0);
  }

  #clientHeader(r: FrameReader): void {
    if (r.type === HEADERS && this.blockSince < 0) {
      this.blockSince = this.#now;
      this.#blockStream = r.stream;
      this.#blockEnds = (r.flags & END_STREAM) !== 0;
    } else if (r.type === DATA) {
      this.#window -= r.length;
      const s = this.#streams.get(r.stream);
      if (s !== undefined) {
        s.window -= r.length;
        s.since = this.#now;
        if (r.flags & END_STREAM) s.sent = true;
      }
    } else if (r.type === RST_STREAM) this.#end(r.stream);
  }

  #clientEnd(r: FrameReader, kept: Uint8Array): void {
    if (r.type === WINDOW_UPDATE && kept.length === 4) {
      const add = increment(kept);
      if (r.stream === 0) {
        this.#answerWindow += add;
        if (this.#answerWindow > 0) this.#answerHeldSince = -1;
      } else {
        const s = this.#streams.get(r.stream);
        if (s !== undefined) this.#growAnswer(s, add);
      }
      return;
    }
    if (r.type === SETTINGS && (r.flags & ACK) === 0) {
      const size = initialWindow(kept);
      if (size !== undefined) {
        // RFC 9113 §6.9.2: the change applies to every open stream's window.
        for (const s of this.#streams.values()) this.#growAnswer(s, size - this.#answerInitial);
        this.#answerInitial = size;
      }
      return;
    }
    if ((r.type !== HEADERS && r.type !== CONTINUATION) || (r.flags & END_HEADERS) === 0) return;
    this.blockSince = -1;
    const stream = this.#blockStream;
    const open = this.#streams.get(stream);
    if (open !== undefined) {
      // Trailers: the body's end when they carry END_STREAM.
      if (this.#blockEnds) open.sent = true;
      return;
    }
    // A new request (client streams are odd and increasing); a block on a finished stream is the
    // server's to refuse.
    if (stream % 2 === 1 && stream > this.#highest) {
      this.#highest = stream;
      this.#streams.set(stream, {
        sent: this.#blockEnds,
        window: this.#initial,
        since: this.#now,
        answerWindow: this.#answerInitial,
        heldSince: this.#answerInitial > 0 ? -1 : this.#now,
      });
      this.requests++;
    }
  }

  #serverEnd(r: FrameReader, kept: Uint8Array): void {
    if (r.type === WINDOW_UPDATE && kept.length === 4) {
      const add = increment(kept);
      if (r.stream === 0) {
        if (this.#window <= 0 && this.#window + add > 0) this.#windowSince = this.#now;
        this.#window += add;
      } else {
        const s = this.#streams.get(r.stream);
        if (s !== undefined) this.#grow(s, add);
      }
    } else if (r.type === SETTINGS && (r.flags & ACK) === 0) {
      const size = initialWindow(kept);
      if (size !== undefined) {
        for (const s of this.#streams.values()) this.#grow(s, size - this.#initial);
        this.#initial = size;
      }
    }
  }

  /** The client changed a stream's window for the answer. */
  #growAnswer(s: Stream, add: number): void {
    s.answerWindow += add;
    if (s.answerWindow > 0) s.heldSince = -1;
    else if (s.heldSince < 0) s.heldSince = this.#now;
  }

  /** The server sent `length` bytes of DATA on `stream`, out of the client's grant. */
  #answered(stream: number, length: number): void {
    if (length === 0) return;
    this.#answerWindow -= length;
    if (this.#answerWindow <= 0 && this.#answerHeldSince < 0) this.#answerHeldSince = this.#now;
    const s = this.#streams.get(stream);
    if (s === undefined) return;
    s.answerWindow -= length;
    if (s.answerWindow <= 0 && s.heldSince < 0) s.heldSince = this.#now;
  }

  /** The server changed a stream's window: room again restarts its body deadline. */
  #grow(s: Stream, add: number): void {
    if (s.window <= 0 && s.window + add > 0) s.since = this.#now;
    s.window += add;
  }

  #end(stream: number): void {
    if (this.#streams.delete(stream) && this.#streams.size === 0) this.idleSince = this.#now;
  }
}

/** A WINDOW_UPDATE's increment (31 bits). */
function increment(kept: Uint8Array): number {
  return ((kept[0]! & 0x7f) << 24 | kept[1]! << 16 | kept[2]! << 8 | kept[3]!) >>> 0;
}

/** The last SETTINGS_INITIAL_WINDOW_SIZE of a SETTINGS payload, if it has one. */
function initialWindow(kept: Uint8Array): number | undefined {
  let size: number | undefined;
  for (let at = 0; at + 6 <= kept.length; at += 6) {
    if ((kept[at]! << 8 | kept[at + 1]!) !== INITIAL_WINDOW_SIZE) continue;
    size = (kept[at + 2]! << 24 | kept[at + 3]! << 16 | kept[at + 4]! << 8 | kept[at + 5]!) >>> 0;
  }
  return size;
}

function noop(): void {}
