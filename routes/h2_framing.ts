/**
 * Follows one HTTP/2 connection as its bytes go by in both directions, reading frame headers
 * only (RFC 9113 §4.1: 24-bit length, type, flags, 31-bit stream id) and skipping every payload
 * unread: which requests are open, and whether the client is in the middle of a header block.
 * The connection front (`conn_front.ts`) sets its deadlines from that, as it does from
 * `conn_framing.ts` for HTTP/1.1; the protocol itself stays the server's to check.
 *
 * A request is open from the end of its HEADERS block (client) until the server ends its answer
 * (END_STREAM on HEADERS or DATA) or either side resets the stream (RST_STREAM). The rest of the
 * client's body after the answer is not waited for: the answer is complete for the client.
 */

const DATA = 0x0;
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const CONTINUATION = 0x9;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;

/** What the client sends after `PRI * HTTP/2.0\r\n\r\n` (already read by the HTTP/1.1 follower). */
const PREFACE_REST = [0x53, 0x4d, 0x0d, 0x0a, 0x0d, 0x0a]; // "SM\r\n\r\n"

/** One direction's frame headers, each handed over once complete; payloads skipped. */
class FrameReader {
  readonly #head = new Uint8Array(9);
  #have = 0;
  /** Payload bytes of the current frame still to skip. */
  #skip = 0;

  /**
   * Walks `buf`, calling `onHeader` for each frame header and `onEnd` when a frame's payload is
   * complete (right after `onHeader` for an empty one).
   */
  walk(
    buf: Uint8Array,
    from: number,
    onHeader: (type: number, flags: number, stream: number) => void,
    onEnd: () => void,
  ): void {
    let i = from;
    const n = buf.length;
    while (i < n) {
      if (this.#skip > 0) {
        const take = Math.min(this.#skip, n - i);
        this.#skip -= take;
        i += take;
        if (this.#skip === 0) onEnd();
        continue;
      }
      const take = Math.min(9 - this.#have, n - i);
      this.#head.set(buf.subarray(i, i + take), this.#have);
      this.#have += take;
      i += take;
      if (this.#have < 9) return;
      this.#have = 0;
      const h = this.#head;
      this.#skip = (h[0]! << 16) | (h[1]! << 8) | h[2]!;
      const stream = ((h[5]! & 0x7f) << 24) | (h[6]! << 16) | (h[7]! << 8) | h[8]!;
      onHeader(h[3]!, h[4]!, stream);
      if (this.#skip === 0) onEnd();
    }
  }
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
  readonly #open = new Set<number>();
  #preface = 0;
  #highest = 0;
  readonly #client = new FrameReader();
  readonly #server = new FrameReader();
  /** The client's frame being read: type and flags. */
  #type = -1;
  #flags = 0;
  #blockStream = 0;
  #now = 0;

  /** Requests open (answer not ended, stream not reset). */
  get open(): number {
    return this.#open.size;
  }

  /** The client's bytes, from just after `PRI * HTTP/2.0\r\n\r\n`; `now` stamps what begins. */
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
    this.#client.walk(buf, i, this.#clientHeader, this.#clientEnd);
  }

  /** The server's bytes, from the start of its side of the connection. */
  fromServer(buf: Uint8Array, now: number): void {
    this.#now = now;
    this.#server.walk(buf, 0, this.#serverHeader, noop);
  }

  readonly #clientHeader = (type: number, flags: number, stream: number): void => {
    this.#type = type;
    this.#flags = flags;
    if (type === HEADERS && this.blockSince < 0) {
      this.blockSince = this.#now;
      this.#blockStream = stream;
    } else if (type === RST_STREAM) this.#end(stream);
  };

  readonly #clientEnd = (): void => {
    const type = this.#type;
    if ((type !== HEADERS && type !== CONTINUATION) || (this.#flags & END_HEADERS) === 0) return;
    this.blockSince = -1;
    const stream = this.#blockStream;
    // A new request (client streams are odd and increasing); a later block on an open stream is
    // its trailers, one on a finished stream the server's to refuse.
    if (stream % 2 === 1 && stream > this.#highest) {
      this.#highest = stream;
      this.#open.add(stream);
      this.requests++;
    }
  };

  readonly #serverHeader = (type: number, flags: number, stream: number): void => {
    if (type === RST_STREAM || ((type === HEADERS || type === DATA) && flags & END_STREAM)) {
      this.#end(stream);
    }
  };

  #end(stream: number): void {
    if (this.#open.delete(stream) && this.#open.size === 0) this.idleSince = this.#now;
  }
}

function noop(): void {}
