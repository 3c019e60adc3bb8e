/**
 * Raw HTTP/1.1 over a real socket, for requests no `fetch` client would send (malformed
 * framing, lower-case methods, repeated headers), and the answers read back as a client reading
 * the framing gets them (`AnswerReader`).
 */

const enc = new TextEncoder();
export const bytes = (...parts: Array<string | Uint8Array>): Uint8Array => {
  const chunks = parts.map((p) => typeof p === "string" ? enc.encode(p) : p);
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
};

/**
 * Sends `raw` and returns the status of the first response (0 if none came) and its trace id. A request whose
 * body is shorter than it claims is followed by a half-close, the way a client that gives up
 * ends it; every other request says `Connection: close` and waits for the answer.
 */
export async function rawSend(
  port: number,
  raw: Uint8Array,
  halfClose: boolean,
): Promise<{ status: number; trace: string | undefined }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(raw).catch(() => {});
    if (halfClose) await conn.closeWrite().catch(() => {});
    const buf = new Uint8Array(256);
    let text = "";
    // A server that neither answers nor closes fails the case instead of hanging the test.
    const timer = setTimeout(() => conn.close(), 10_000);
    try {
      while (!text.includes("\r\n\r\n")) {
        const n = await conn.read(buf).catch(() => null);
        if (n === null) break;
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
    } finally {
      clearTimeout(timer);
    }
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
    const trace = /\r\nx-waf-trace-id: (\w+)/i.exec(text)?.[1];
    return { status: m ? Number(m[1]) : 0, trace };
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the timer
    }
  }
}

/** Resolves with the time (ms since `since`) at which the server closed the connection. */
export async function closedAfter(
  conn: Deno.Conn,
  since: number,
  limitMs = 10_000,
): Promise<number> {
  const buf = new Uint8Array(4096);
  const timer = setTimeout(() => conn.close(), limitMs);
  try {
    while (true) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) return performance.now() - since;
    }
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // closed
    }
  }
}

/** One answer read off a raw connection. */
export interface RawAnswer {
  readonly status: number;
  /** The head up to its empty line, decoded (lower-cased with `lowerCase`). */
  readonly head: string;
  /** The head's lines, the status line first. */
  readonly lines: string[];
  readonly body: string;
}

export interface AnswerReaderOptions {
  /** How the bytes become text: `latin1` (one char a byte, as sent; the default) or `utf-8`. */
  readonly decoding?: "latin1" | "utf-8";
  /** Lower-cases the head, names and values (for `includes` checks); default false. */
  readonly lowerCase?: boolean;
}

const utf8 = new TextDecoder();

/** The bytes as text, one char a byte. */
export function latin1(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode(...b.subarray(i, i + 8192));
  return s;
}

/** Where CRLF (or CRLFCRLF with `blank`) begins in `buf`, or -1. */
function crlf(buf: Uint8Array, blank: boolean): number {
  for (let i = buf.indexOf(13); i >= 0; i = buf.indexOf(13, i + 1)) {
    if (buf[i + 1] !== 10) continue;
    if (!blank || (buf[i + 2] === 13 && buf[i + 3] === 10)) return i;
  }
  return -1;
}

/**
 * A client reading the answers of one raw connection by RFC 9112 §6.3: Content-Length, chunked
 * or close-delimited bodies, none for a HEAD (`bodyless`), 1xx, 204 and 304.
 */
export class AnswerReader {
  #buf: Uint8Array = new Uint8Array(0);
  readonly #decode: (b: Uint8Array) => string;
  readonly #lowerCase: boolean;

  constructor(readonly conn: Deno.Conn, options: AnswerReaderOptions = {}) {
    this.#decode = options.decoding === "utf-8" ? (b) => utf8.decode(b) : latin1;
    this.#lowerCase = options.lowerCase ?? false;
  }

  async #more(): Promise<boolean> {
    const chunk = new Uint8Array(65536);
    const n = await this.conn.read(chunk).catch(() => null);
    if (n === null) return false;
    this.#buf = bytes(this.#buf, chunk.subarray(0, n));
    return true;
  }

  /** The next answer; null when the connection ended before it was complete. */
  async next(bodyless = false): Promise<RawAnswer | null> {
    let end: number;
    while ((end = crlf(this.#buf, true)) < 0) if (!(await this.#more())) return null;
    const text = this.#decode(this.#buf.subarray(0, end));
    const head = this.#lowerCase ? text.toLowerCase() : text;
    this.#buf = this.#buf.subarray(end + 4);
    const lines = head.split("\r\n");
    const status = Number(head.slice(9, 12));
    const field = (name: string) =>
      lines.find((l) => l.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim();
    if (bodyless || status === 204 || status === 304 || status < 200) {
      return { status, head, lines, body: "" };
    }
    const body: Uint8Array[] = [];
    const cl = field("content-length");
    if (cl !== undefined) {
      while (this.#buf.length < Number(cl)) if (!(await this.#more())) return null;
      body.push(this.#buf.subarray(0, Number(cl)));
      this.#buf = this.#buf.subarray(Number(cl));
    } else if (field("transfer-encoding")?.toLowerCase() === "chunked") {
      for (;;) {
        let line: number;
        while ((line = crlf(this.#buf, false)) < 0) if (!(await this.#more())) return null;
        const size = parseInt(latin1(this.#buf.subarray(0, line)), 16);
        while (this.#buf.length < line + 2 + size + 2) if (!(await this.#more())) return null;
        body.push(this.#buf.subarray(line + 2, line + 2 + size));
        this.#buf = this.#buf.subarray(line + 2 + size + 2);
        if (size === 0) break;
      }
    } else {
      // Close-delimited.
      while (await this.#more());
      body.push(this.#buf);
      this.#buf = new Uint8Array(0);
    }
    return { status, head, lines, body: this.#decode(bytes(...body)) };
  }

  /** True when the server closed the connection with nothing more after the last answer. */
  async closed(): Promise<boolean> {
    return this.#buf.length === 0 && !(await this.#more());
  }
}
