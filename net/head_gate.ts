/**
 * The own parser's checks on a connection the own HTTP/1.1 server handed over to `Deno.serve`
 * (an upgrade, the HTTP/2 preface, CONNECT): `Deno.serve` is more lenient than our parser
 * (hyper forwards a `Content_Length` field, takes `GET http://h?x=/../p` for `GET /../p`), and
 * after a refused upgrade the same connection carries more HTTP/1.1 requests. So each request
 * head on it is held until complete, parsed as the own server parses it (`parseRequestHead`:
 * what it refuses is refused here, with 400, before a byte of it is forwarded), and forwarded
 * with an absolute-form target's empty path made `/`.
 */
import { headEnd, latin1 } from "./http1_head.ts";
import {
  BadRequest,
  type BrokenRequestHead,
  emptyPathAt,
  MAX_HEAD_BYTES,
  parseRequestHead,
} from "./http1_request_head.ts";

/** What the gate makes of the bytes it was given. */
export type GateResult =
  | {
    readonly kind: "wait";
    /** These bytes began a head (its deadline starts). */
    readonly began: boolean;
  }
  | {
    readonly kind: "head";
    /** The head to forward (checked, the target made unambiguous). */
    readonly head: Uint8Array;
    /** What came after it (a body, further requests). */
    readonly rest: Uint8Array;
  }
  | {
    readonly kind: "refuse";
    readonly reason: string;
    /** The refused request, for its access-log record (when it has a request line). */
    readonly request: BrokenRequestHead | undefined;
  };

const EMPTY = new Uint8Array(0);
const SLASH = 47;

/** Holds one request head at a time until it is whole, then checks it. */
export class HeadGate {
  #buf = new Uint8Array(1024);
  #len = 0;
  /** How much of `#buf` was searched for the head's end already. */
  #scanned = 0;

  /** Bytes held of a head not yet whole. */
  get held(): number {
    return this.#len;
  }

  /** The bytes held, handed back (the connection stopped being HTTP/1.1). */
  flush(): Uint8Array {
    const out = this.#buf.slice(0, this.#len);
    this.#len = 0;
    this.#scanned = 0;
    return out;
  }

  /** Takes the client's bytes at a request boundary (or inside a head it holds). */
  take(chunk: Uint8Array): GateResult {
    const began = this.#len === 0;
    let at = 0;
    // Empty lines before a request line are dropped (RFC 9112 §2.2), as the own server does.
    if (began) {
      while (at < chunk.length && (chunk[at] === 10 || chunk[at] === 13)) at++;
      if (at === chunk.length) return { kind: "wait", began: false };
    }
    this.#append(chunk.subarray(at));
    const end = headEnd(this.#buf, Math.max(0, this.#scanned - 3), this.#len);
    if (end < 0) {
      this.#scanned = this.#len;
      if (this.#len > MAX_HEAD_BYTES) return this.#refuse("head too large", undefined);
      return { kind: "wait", began };
    }
    if (end > MAX_HEAD_BYTES) return this.#refuse("head too large", undefined);
    const text = latin1(this.#buf, 0, end);
    try {
      const head = parseRequestHead(text);
      const forwarded = this.#forwarded(end, head.method, text);
      const rest = this.#len > end ? this.#buf.slice(end, this.#len) : EMPTY;
      this.#len = 0;
      this.#scanned = 0;
      return { kind: "head", head: forwarded, rest };
    } catch (err) {
      if (!(err instanceof BadRequest)) throw err;
      return this.#refuse(err.reason, err.request);
    }
  }

  /** The head's bytes as forwarded: an absolute-form target's empty path becomes `/`. */
  #forwarded(end: number, method: string, text: string): Uint8Array {
    const head = this.#buf.slice(0, end);
    if (method === "CONNECT") return head;
    const from = method.length + 1;
    const raw = text.slice(from, text.indexOf(" ", from));
    const inserted = emptyPathAt(raw);
    if (inserted < 0) return head;
    // Scheme and authority are ASCII, so the index in the target is one in the bytes.
    const at = from + inserted;
    const out = new Uint8Array(end + 1);
    out.set(head.subarray(0, at));
    out[at] = SLASH;
    out.set(head.subarray(at), at + 1);
    return out;
  }

  #refuse(reason: string, request: BrokenRequestHead | undefined): GateResult {
    this.#len = 0;
    this.#scanned = 0;
    return { kind: "refuse", reason, request };
  }

  #append(bytes: Uint8Array): void {
    if (this.#len + bytes.length > this.#buf.length) {
      const grown = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + bytes.length));
      grown.set(this.#buf.subarray(0, this.#len));
      this.#buf = grown;
    }
    this.#buf.set(bytes, this.#len);
    this.#len += bytes.length;
  }
}
