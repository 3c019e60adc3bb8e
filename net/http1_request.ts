/**
 * A request of the own HTTP/1.1 server as the data-plane app reads it: the `Request` surface on
 * the parsed head (`IncomingRequest`, `PairHeaders`), the body read from the connection as the
 * handler asks for it.
 */
import { HEADER_PAIRS } from "./direct_answer.ts";
import { joined } from "./http1_request_head.ts";

/**
 * The request's headers as `Headers` reads them (lower-case names, sorted, repeats joined), on
 * the parsed pairs: no copy, no validation again (the parser checked them).
 */
export class PairHeaders {
  #pairs: Array<[string, string]>;
  constructor(pairs: Array<[string, string]>) {
    this.#pairs = pairs;
  }
  get(name: string): string | null {
    const key = name.toLowerCase();
    for (const p of this.#pairs) if (p[0] === key) return p[1];
    return null;
  }
  has(name: string): boolean {
    return this.get(name) !== null;
  }
  getSetCookie(): string[] {
    const v = this.get("set-cookie");
    return v === null ? [] : [v];
  }
  forEach(fn: (value: string, name: string, parent: Headers) => void, thisArg?: unknown): void {
    for (const p of this.#pairs) fn.call(thisArg, p[1], p[0], this as unknown as Headers);
  }
  set(name: string, value: string): void {
    this.delete(name);
    this.append(name, value);
  }
  append(name: string, value: string): void {
    const key = name.toLowerCase();
    const old = this.#pairs.find((p) => p[0] === key);
    if (old) old[1] = `${old[1]}, ${value}`;
    else this.#pairs = joined([...this.#pairs, [key, value]]);
  }
  delete(name: string): void {
    const key = name.toLowerCase();
    this.#pairs = this.#pairs.filter((p) => p[0] !== key);
  }
  *entries(): IterableIterator<[string, string]> {
    for (const p of this.#pairs) yield [p[0], p[1]];
  }
  *keys(): IterableIterator<string> {
    for (const p of this.#pairs) yield p[0];
  }
  *values(): IterableIterator<string> {
    for (const p of this.#pairs) yield p[1];
  }
  /** The pairs themselves (not a copy). */
  pairs(): Array<[string, string]> {
    return this.#pairs;
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

const NEVER = new AbortController().signal;
const EMPTY = new Uint8Array(0);

/**
 * A request as the data-plane app reads it: the `Request` surface on the parsed head, with the
 * URL as received (not normalised by the URL parser, as `Deno.serve` gives it) and the method
 * as sent (a `Request` would upper-case `get` and refuse `TRACE`, hiding them from the engine).
 */
export class IncomingRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: PairHeaders;
  #source: BodySource | undefined;
  #stream: ReadableStream<Uint8Array> | undefined;
  #used = false;

  constructor(method: string, url: string, headers: PairHeaders, source: BodySource | undefined) {
    this.method = method;
    this.url = url;
    this.headers = headers;
    this.#source = source;
  }

  // The constant part of the `Request` surface lives on the prototype, not in every request.
  get signal(): AbortSignal {
    return NEVER;
  }
  get cache(): string {
    return "default";
  }
  get credentials(): string {
    return "same-origin";
  }
  get destination(): string {
    return "";
  }
  get integrity(): string {
    return "";
  }
  get keepalive(): boolean {
    return false;
  }
  get mode(): string {
    return "cors";
  }
  get redirect(): string {
    return "follow";
  }
  get referrer(): string {
    return "about:client";
  }
  get referrerPolicy(): string {
    return "";
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#source === undefined) return null;
    return this.#stream ??= this.#source.stream();
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    if (this.#used) throw new TypeError("Body already consumed");
    this.#used = true;
    const source = this.#source;
    if (source === undefined) return EMPTY;
    if (this.#stream === undefined) {
      const whole = source.whole();
      if (whole !== undefined) return whole;
    }
    return new Uint8Array(await new Response(this.body).arrayBuffer());
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.bytes()).slice().buffer;
  }

  async text(): Promise<string> {
    return new TextDecoder().decode(await this.bytes());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async blob(): Promise<Blob> {
    return new Blob([await this.bytes()], { type: this.headers.get("content-type") ?? "" });
  }

  async formData(): Promise<FormData> {
    const type = this.headers.get("content-type") ?? "";
    return await new Response(await this.bytes(), { headers: { "content-type": type } })
      .formData();
  }

  clone(): never {
    throw new TypeError("This request cannot be cloned");
  }

  /** The parsed pairs, for the transaction (direct_answer.ts): no copy of the headers. */
  get [HEADER_PAIRS](): Array<[string, string]> {
    return this.headers.pairs();
  }
}

/** The body of the request being read, from the connection. */
export interface BodySource {
  /** The whole body when it is already in the buffer (no stream needed). */
  whole(): Uint8Array<ArrayBuffer> | undefined;
  stream(): ReadableStream<Uint8Array>;
}
