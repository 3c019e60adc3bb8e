/**
 * Request bodies in the data plane: read only the prefix the engine inspects whole, then stream
 * the rest to the upstream, each chunk handed to the body's tail judge first (see `body_tail.ts`)
 * and the one that completes the body held until all of it is judged, so an upstream never
 * receives a whole body the judge refuses: the upstream request is aborted instead. A body over the
 * site's limit is refused without being buffered: a declared Content-Length is checked before
 * reading, and a chunked body is counted as it streams (aborted the moment the count passes the
 * limit).
 */
import { concatChunks } from "../../net/chunks.ts";

export type BodyPlan =
  | { readonly kind: "none" }
  /** Over the limit, decided before (declared length) or while reading the prefix. */
  | { readonly kind: "too_large" }
  /** The client's body broke off or its framing was invalid while the prefix was read. */
  | { readonly kind: "unreadable" }
  /** The whole body, small enough to sit in memory for inspection. */
  | { readonly kind: "buffered"; readonly bytes: Uint8Array }
  /** The inspected prefix plus a stream that replays it and continues with the rest. */
  | {
    readonly kind: "streaming";
    readonly prefix: Uint8Array;
    readonly body: ReadableStream<Uint8Array>;
    readonly progress: StreamProgress;
  };

export interface StreamProgress {
  /** Bytes that went through so far. */
  bytes: number;
  /** Set once the count passed the limit. */
  exceeded: boolean;
  /** Set when reading the client's body failed (it broke off, or its framing was invalid). */
  failed: boolean;
  /** Receives the total byte count in `bytes_in` when the stream ends normally. */
  record?: { bytes_in: number | null };
  /** Judges the body as it streams (set by the transaction before the upstream reads it). */
  tail?: BodyGate;
  /** Set once the tail judge refused the body (the upstream request is aborted). */
  refused: boolean;
}

/** What judges a streaming body chunk by chunk and may refuse it. */
export interface BodyGate {
  /** Takes the next chunk as sent, the inspected prefix first. */
  write(chunk: Uint8Array): Promise<void>;
  /** The body ended (or its last chunk is held): resolves once all of it is judged. */
  end(): Promise<void>;
  /** Whether the body must not reach the upstream whole. */
  readonly stop: boolean;
}

/** The plan of a request without a body, shared: most requests have none. */
export const NO_BODY: BodyPlan = Object.freeze({ kind: "none" });

/** Raised into the upstream request stream when the body passes the limit. */
export class BodyTooLargeError extends Error {
  constructor() {
    super("Request body is larger than the site's limit");
    this.name = "BodyTooLargeError";
  }
}

/** Raised into the upstream request stream when the tail judge refuses the body. */
export class BodyRefusedError extends Error {
  constructor() {
    super("Request body was refused past the inspected prefix");
    this.name = "BodyRefusedError";
  }
}

/**
 * Whether a request can carry a body, told without `req.body` when it declares a length (the
 * getter turns a body the own HTTP/1.1 server holds whole into a stream): false when it
 * declares none, or declares no length and has no body.
 */
export function mayHaveBody(req: Request): boolean {
  const declared = req.headers.get("content-length");
  return declared === null ? req.body !== null : Number(declared) !== 0;
}

/**
 * Reads up to `inspectBytes` of the body.
 *
 * @param req the incoming request
 * @param maxBytes the site's body limit
 * @param inspectBytes how much the engine inspects (at most `maxBytes`)
 */
export async function planBody(
  req: Request,
  maxBytes: number,
  inspectBytes: number,
): Promise<BodyPlan> {
  const declaredText = req.headers.get("content-length");
  const declared = declaredText === null ? undefined : Number(declaredText);
  if (declared === 0) return NO_BODY;
  if (declared !== undefined && declared <= inspectBytes && declared <= maxBytes) {
    // The whole body is inspected anyway: one read instead of a reader loop (the HTTP server
    // enforces a declared length, so this cannot read more than `declared`). `req.body` is not
    // touched first: the own HTTP/1.1 server then hands over a body already in its buffer as
    // it is, where asking for the stream would read it through one. A request without a body
    // (a GET whose body the server drops) reads as empty.
    let bytes: Uint8Array;
    try {
      bytes = await req.bytes();
    } catch {
      return { kind: "unreadable" };
    }
    return bytes.length === 0 ? NO_BODY : { kind: "buffered", bytes };
  }
  if (req.body === null) return NO_BODY;
  if (declared !== undefined && declared > maxBytes) {
    await req.body.cancel().catch(() => {});
    return { kind: "too_large" };
  }
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  // Reading stops at the first chunk boundary past the inspection prefix.
  while (total < inspectBytes || inspectBytes === 0) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch {
      return { kind: "unreadable" };
    }
    const { done, value } = chunk;
    if (done) {
      return total === 0
        ? { kind: "none" }
        : { kind: "buffered", bytes: concatChunks(chunks, total) };
    }
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      return { kind: "too_large" };
    }
    chunks.push(value);
    if (inspectBytes === 0) break;
  }
  const prefix = concatChunks(chunks, total);
  const progress: StreamProgress = { bytes: total, exceeded: false, failed: false, refused: false };
  // A declared length is enforced by the HTTP server itself, so only a chunked body is counted.
  const counted = declared === undefined;
  let replayed = false;
  let judged = false;
  /** Whether `n` bytes are the whole body by its declared length. */
  const whole = (n: number) => declared !== undefined && n >= declared;
  /**
   * Lets the tail judge finish before the body's last byte goes on; true (and the stream errored)
   * when it refuses the body.
   */
  const refusedAtEnd = async (
    controller: ReadableStreamDefaultController<Uint8Array>,
  ): Promise<boolean> => {
    const tail = progress.tail;
    if (tail === undefined || judged) return false;
    judged = true;
    await tail.end();
    return refuse(tail, controller);
  };
  const refuse = (
    tail: BodyGate,
    controller: ReadableStreamDefaultController<Uint8Array>,
  ): boolean => {
    if (!tail.stop) return false;
    progress.refused = true;
    reader.cancel().catch(() => {});
    controller.error(new BodyRefusedError());
    return true;
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!replayed) {
        replayed = true;
        // The prefix may already be the whole body: judged to its end before it goes.
        if (whole(progress.bytes) && await refusedAtEnd(controller)) return;
        controller.enqueue(prefix);
        return;
      }
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        progress.failed = true;
        controller.error(err);
        return;
      }
      const { done, value } = chunk;
      if (done) {
        if (await refusedAtEnd(controller)) return;
        controller.close();
        if (progress.record) progress.record.bytes_in = progress.bytes;
        return;
      }
      progress.bytes += value.length;
      if (counted && progress.bytes > maxBytes) {
        progress.exceeded = true;
        await reader.cancel().catch(() => {});
        controller.error(new BodyTooLargeError());
        return;
      }
      const tail = progress.tail;
      if (tail !== undefined && !judged) {
        await tail.write(value);
        if (refuse(tail, controller)) return;
        if (whole(progress.bytes) && await refusedAtEnd(controller)) return;
      }
      controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
    // Pulled only when read: a stream that reads ahead would pull (and pass on) the prefix before
    // the transaction has set the tail judge, the one chunk ahead of what the upstream took.
  }, { highWaterMark: 0 });
  return { kind: "streaming", prefix, body, progress };
}
