/**
 * Follows one HTTP/2 connection as its bytes go by in both directions, reading frame headers
 * (RFC 9113 §4.1: 24-bit length, type, flags, 31-bit stream id) and, of the payloads, only the
 * flow-control ones (SETTINGS, WINDOW_UPDATE) and a DATA frame's pad length; every other payload
 * is skipped unread. It tells
 * which requests are open, whether the client is in the middle of a header block, since when a
 * request body the server has room for has not moved, and since when an answer has been held
 * back by the client's own flow control (it grants no room to receive). The connection front
 * (`conn_front.ts`) sets its deadlines from that, as it does from `http1_framing.ts` for HTTP/1.1; the protocol
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
const GOAWAY = 0x7;
const WINDOW_UPDATE = 0x8;
const CONTINUATION = 0x9;
const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const INITIAL_WINDOW_SIZE = 0x4;
/** Every flow-control window's size until SETTINGS or WINDOW_UPDATE says otherwise. */
const DEFAULT_WINDOW = 65_535;

/** What the client sends after `PRI * HTTP/2.0\r\n\r\n` (already read by the HTTP/1.1 follower). */
const PREFACE_REST = [0x53, 0x4d, 0x0d, 0x0a, 0x0d, 0x0a]; // "SM\r\n\r\n"

/** What a direction's frames are handed to. */
interface FrameSink {
  /** A frame header is complete (its fields are on the reader). */
  header(reader: FrameReader): void;
  /** `n` bytes of a DATA frame's data went by (its padding and pad length are not data). */
  data(reader: FrameReader, n: number): void;
  /**
   * The current frame is complete; a SETTINGS frame's last SETTINGS_INITIAL_WINDOW_SIZE and a
   * WINDOW_UPDATE's increment are on the reader.
   */
  end(reader: FrameReader): void;
}

/**
 * One direction's frames: headers read, the flow-control payloads (SETTINGS, WINDOW_UPDATE) read
 * as they go by, however long (nothing is kept but the entry in progress), a DATA frame's pad
 * length read, every other payload skipped.
 */
class FrameReader {
  type = -1;
  flags = 0;
  stream = 0;
  length = 0;
  /** A SETTINGS frame's last SETTINGS_INITIAL_WINDOW_SIZE so far; -1: none. */
  initialWindow = -1;
  /** A WINDOW_UPDATE's increment once its 4 bytes are read; -1 before. */
  increment = -1;
  readonly #head = new Uint8Array(9);
  #have = 0;
  /** Payload bytes of the current frame still to come. */
  #skip = 0;
  /** Payload bytes of the current frame read so far (SETTINGS, WINDOW_UPDATE). */
  #at = 0;
  /** The SETTINGS entry (or WINDOW_UPDATE payload) in progress. */
  readonly #field = new Uint8Array(6);
  #parse = false;
  /** A DATA frame's data bytes still to come; -1 until its pad length is read. */
  #dataLeft = 0;

  constructor(readonly sink: FrameSink) {}

  /** Between two frames: no header or payload in progress. */
  get between(): boolean {
    return this.#have === 0 && this.#skip === 0;
  }

  walk(buf: Uint8Array, from: number): void {
    let i = from;
    const n = buf.length;
    while (i < n) {
      if (this.#skip > 0) {
        const take = Math.min(this.#skip, n - i);
        if (this.#parse) this.#read(buf, i, i + take);
        else if (this.type === DATA) this.#data(buf, i, take);
        this.#skip -= take;
        i += take;
        if (this.#skip === 0) this.sink.end(this);
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
      this.#at = 0;
      this.#parse = this.type === SETTINGS || this.type === WINDOW_UPDATE;
      this.initialWindow = -1;
      this.increment = -1;
      this.#dataLeft = this.flags & PADDED ? -1 : this.length;
      this.sink.header(this);
      if (this.#skip === 0) this.sink.end(this);
    }
  }

  /** `take` DATA payload bytes from `i`: the pad length first when PADDED, then data, padding. */
  #data(buf: Uint8Array, i: number, take: number): void {
    let t = take;
    if (this.#dataLeft < 0) {
      // Padding longer than the frame is the server's to refuse (PROTOCOL_ERROR): no data.
      this.#dataLeft = Math.max(0, this.length - 1 - buf[i]!);
      t--;
    }
    const d = Math.min(t, this.#dataLeft);
    if (d <= 0) return;
    this.#dataLeft -= d;
    this.sink.data(this, d);
  }

  /** SETTINGS entries (6 bytes: id, value) and a WINDOW_UPDATE's increment, byte by byte. */
  #read(buf: Uint8Array, from: number, to: number): void {
    const f = this.#field;
    for (let j = from; j < to; j++) {
      const at = this.#at++;
      if (this.type === WINDOW_UPDATE) {
        if (at >= 4) continue;
        f[at] = buf[j]!;
        if (at === 3) {
          this.increment = ((f[0]! & 0x7f) << 24 | f[1]! << 16 | f[2]! << 8 | f[3]!) >>> 0;
        }
        continue;
      }
      const k = at % 6;
      f[k] = buf[j]!;
      if (k === 5 && (f[0]! << 8 | f[1]!) === INITIAL_WINDOW_SIZE) {
        this.initialWindow = (f[2]! << 24 | f[3]! << 16 | f[4]! << 8 | f[5]!) >>> 0;
      }
    }
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
  /** When its header block ended: its body's rate is counted from then (the minimum rate). */
  readonly opened: number;
  /** Body data received so far. */
  bytes: number;
  /** Time its window was used up (the client could not send), and since when it is; -1: not. */
  stalled: number;
  stalledSince: number;
  /** The connection's stalled time when it opened (what came before is not its own). */
  readonly connStalledAtOpen: number;
  /** What the server may still send on it: the client's grant, less the DATA answered. */
  answerWindow: number;
  /** When the client's grant for it ran out; -1 while it has room. */
  heldSince: number;
  /**
   * When the server's answer began (its first HEADERS frame); -1 before. Until then the server
   * has no body to send, so nothing is held back whatever the windows.
   */
  answerSince: number;
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
  /** Time the connection's window was used up, and since when it is; -1: not. */
  #connStalled = 0;
  #connStalledSince = -1;
  /** The client's SETTINGS_INITIAL_WINDOW_SIZE, and the connection's window for the answers. */
  #answerInitial = DEFAULT_WINDOW;
  #answerWindow = DEFAULT_WINDOW;
  /** When the connection's window for the answers ran out; -1 while it has room. */
  #answerHeldSince = -1;
  #now = 0;

  readonly #client = new FrameReader({
    header: (r) => this.#clientHeader(r),
    data: (r, n) => {
      const s = this.#streams.get(r.stream);
      if (s !== undefined) {
        s.since = this.#now;
        s.bytes += n;
      }
    },
    end: (r) => this.#clientEnd(r),
  });

  readonly #server = new FrameReader({
    header: (r) => {
      if (r.type === HEADERS) {
        const s = this.#streams.get(r.stream);
        if (s !== undefined && s.answerSince < 0) s.answerSince = this.#now;
      } else if (r.type === DATA) this.#answered(r.stream, r.length);
      if (
        r.type === RST_STREAM || ((r.type === HEADERS || r.type === DATA) && r.flags & END_STREAM)
      ) this.#end(r.stream);
    },
    data: noop,
    end: (r) => this.#serverEnd(r),
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
   * When the earliest request body the server has room for falls below `rate` bytes a second
   * of the client's time (time without flow-control room is not the client's), once `afterMs`
   * of it passed; -1 when no body is awaited with room.
   */
  bodyRateDue(rate: number, afterMs: number): number {
    if (rate <= 0 || this.#window <= 0) return -1;
    const conn = this.#connStalled;
    let due = -1;
    for (const s of this.#streams.values()) {
      if (s.sent || s.window <= 0) continue;
      const stalled = s.stalled + Math.max(0, conn - s.connStalledAtOpen);
      const t = s.opened + afterMs + s.bytes * 1000 / rate + stalled;
      if (due < 0 || t < due) due = t;
    }
    return due;
  }

  /**
   * Since when an answer under way has been held back by the client's flow control (its window,
   * or the connection's, used up by the server's DATA or by SETTINGS), counted from the answer's
   * HEADERS at the earliest; -1 when none is.
   */
  get answerHeldSince(): number {
    let since = -1;
    for (const s of this.#streams.values()) {
      if (s.answerSince < 0) continue;
      let t = s.heldSince >= 0 ? s.heldSince : this.#answerHeldSince;
      if (t < 0) continue;
      if (t < s.answerSince) t = s.answerSince;
      if (since < 0 || t < since) since = t;
    }
    return since;
  }

  /**
   * A GOAWAY frame (RFC 9113 §6.8) with `code`, for the front to send before it closes the
   * connection; undefined while the server's bytes stop inside a frame (a frame put there would
   * break it). Its last stream id is the highest possible (§6.8: what a close without GOAWAY
   * means, so clients retry nothing they would not have retried before): naming the highest
   * request the follower saw aborted Deno's node:http2 client (nghttp2 asserts in
   * `find_stream_on_goaway_func` when it holds an open stream above the id, which a client racing
   * a new request against the close does), killing the client's whole process.
   */
  goaway(code: number): Uint8Array | undefined {
    if (!this.#server.between) return undefined;
    const out = new Uint8Array(17);
    const v = new DataView(out.buffer);
    v.setUint32(0, 8 << 8 | GOAWAY);
    v.setUint32(9, 0x7fff_ffff);
    v.setUint32(13, code);
    return out;
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
      if (this.#window <= 0 && this.#connStalledSince < 0) this.#connStalledSince = this.#now;
      // Flow control counts the whole payload; the body moves only with its data (`data`):
      // empty or padding-only frames do not hold the body deadline off.
      const s = this.#streams.get(r.stream);
      if (s !== undefined) {
        s.window -= r.length;
        if (s.window <= 0 && s.stalledSince < 0) s.stalledSince = this.#now;
        if (r.flags & END_STREAM) s.sent = true;
      }
    } else if (r.type === RST_STREAM) this.#end(r.stream);
  }

  #clientEnd(r: FrameReader): void {
    if (r.type === WINDOW_UPDATE && r.length === 4) {
      const add = r.increment;
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
      const size = r.initialWindow;
      if (size >= 0) {
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
        opened: this.#now,
        bytes: 0,
        stalled: 0,
        stalledSince: this.#initial > 0 ? -1 : this.#now,
        connStalledAtOpen: this.#connStalled,
        answerWindow: this.#answerInitial,
        heldSince: this.#answerInitial > 0 ? -1 : this.#now,
        answerSince: -1,
      });
      this.requests++;
    }
  }

  #serverEnd(r: FrameReader): void {
    if (r.type === WINDOW_UPDATE && r.length === 4) {
      const add = r.increment;
      if (r.stream === 0) {
        if (this.#window <= 0 && this.#window + add > 0) {
          this.#windowSince = this.#now;
          if (this.#connStalledSince >= 0) this.#connStalled += this.#now - this.#connStalledSince;
          this.#connStalledSince = -1;
        }
        this.#window += add;
      } else {
        const s = this.#streams.get(r.stream);
        if (s !== undefined) this.#grow(s, add);
      }
    } else if (r.type === SETTINGS && (r.flags & ACK) === 0) {
      const size = r.initialWindow;
      if (size >= 0) {
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
    if (s.window <= 0 && s.window + add > 0) {
      s.since = this.#now;
      if (s.stalledSince >= 0) s.stalled += this.#now - s.stalledSince;
      s.stalledSince = -1;
    } else if (s.window > 0 && s.window + add <= 0 && s.stalledSince < 0) {
      s.stalledSince = this.#now;
    }
    s.window += add;
  }

  #end(stream: number): void {
    if (this.#streams.delete(stream) && this.#streams.size === 0) this.idleSince = this.#now;
  }
}

function noop(): void {}
