/**
 * The rest of a body past the prefix the engine reads whole, judged as it streams by, a window at
 * a time, so no text attack hides behind padding. Attacks are local: each window of
 * {@link TAIL_WINDOW} bytes is judged as a body of the request's content type, and windows overlap
 * by {@link WINDOW_OVERLAP}, so any fragment up to that long lies whole in one. Windows are cut where
 * the body's own structure starts a new unit when one is near (after a form's `&`, at a multipart
 * delimiter, after an XML tag's `>`), so a form value or a part up to a window long is judged
 * whole; a unit longer than a window is cut with the overlap, and the next window starts with what
 * reopens its context (the form field's `name=`, the part's headers, the JSON containers and the
 * open string), so it is read as the upstream reads it. Memory is one window and its context.
 *
 * The tail cuts the windows and hands each over as a request to judge; the caller judges it (with
 * `inspect`, or a slice at a time) and records the result, so a connector can keep serving others
 * between two slices.
 */
import type { EngineRequest, Finding, Inspection } from "./types.ts";
import { bodyCharset } from "./charset.ts";
import { boundariesOf } from "./extract_body.ts";
import { JsonTrack } from "./json_track.ts";
import { WINDOW_OVERLAP } from "./limits.ts";

/** Bytes judged per window of a body's tail. */
export const TAIL_WINDOW = 64 * 1024;
/**
 * The most of a body (or of its decoded text) judged: past it a site's `oversize_action` applies.
 * A site may accept larger bodies; judging costs what the engine costs per byte, for every byte.
 */
export const MAX_JUDGED_BODY = 32 * 1024 * 1024;
/** A multipart part's header block carried into the windows of its content, at most. */
const MAX_PART_HEAD = 8192;
/** A form field's name carried into the windows of its value, at most. */
const MAX_FIELD_NAME = 1024;

const EMPTY = new Uint8Array(0);
const ENCODER = new TextEncoder();

type Shape = "form" | "multipart" | "json" | "xml" | "text";

/** What the tail needs of the request: its content type and the headers detectors read. */
export interface TailRequest {
  readonly contentType: string;
  /** `host` and `referer`, as the request sent them (the session check reads them). */
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

/**
 * Cuts the bytes of a body into windows to judge as they come, past the first `judged` bytes
 * (which the caller's inspection of the prefix covered; they are followed for their structure
 * only).
 *
 * @example
 * ```ts
 * import { BodyTail, inspect } from "./mod.ts";
 * const tail = new BodyTail(
 *   { contentType: "application/x-www-form-urlencoded", headers: [] },
 *   0,
 * );
 * const windows = [
 *   ...tail.write(new TextEncoder().encode("pad=" + "x".repeat(200_000))),
 *   ...tail.write(new TextEncoder().encode("&q=1'%20union%20select%20password%20from%20users--")),
 *   ...tail.end(),
 * ];
 * for (const w of windows) tail.record(inspect(w, { level: "balanced" }));
 * tail.blocking?.ruleId; // "sqli.union"
 * ```
 */
export class BodyTail {
  readonly #headers: ReadonlyArray<readonly [string, string]>;
  readonly #shape: Shape;
  readonly #judged: number;
  /** `\r\n--boundary`: where a multipart part ends and the next begins. */
  readonly #delimiter: Uint8Array = EMPTY;
  readonly #json: JsonTrack | undefined;
  #buf = new Uint8Array(TAIL_WINDOW * 2);
  #len = 0;
  /** The offset in the body of `#buf[0]`. */
  #base = 0;
  /** What reopens the unit `#buf` starts in. */
  #context: Uint8Array = EMPTY;
  /** Whether `#buf` starts where a unit starts (a field, a part). */
  #unitStart = true;
  /** The first blocking finding at the options' level. */
  blocking: Finding | undefined = undefined;
  /** The strongest finding. */
  best: Finding | undefined = undefined;
  /** Findings of every window, counted. */
  findings = 0;

  /**
   * @param req the content type and the headers the detectors read
   * @param judged the bytes at the start already judged
   */
  constructor(req: TailRequest, judged: number) {
    this.#judged = judged;
    this.#headers = [["content-type", req.contentType], ...req.headers];
    const type = req.contentType.toLowerCase();
    const charset = bodyCharset(req.contentType);
    // `&`, `=`, `>` and quotes are bytes of their own only where ASCII is ASCII.
    const ascii = charset.kind !== "charset" || charset.charset.asciiCompatible;
    const boundary = type.startsWith("multipart/") ? boundariesOf(req.contentType)[0] : undefined;
    if (boundary !== undefined) {
      this.#shape = "multipart";
      this.#delimiter = ENCODER.encode(`\r\n--${boundary}`);
    } else if (!ascii) this.#shape = "text";
    else if (type.includes("x-www-form-urlencoded")) this.#shape = "form";
    else if (type.includes("json")) this.#shape = "json";
    else if (type.includes("xml")) this.#shape = "xml";
    else this.#shape = "text";
    this.#json = this.#shape === "json" ? new JsonTrack() : undefined;
  }

  /**
   * Takes the next bytes of the body.
   *
   * @returns the windows they complete, as requests to judge (none while in the judged prefix)
   */
  write(bytes: Uint8Array): EngineRequest[] {
    const out: EngineRequest[] = [];
    let at = 0;
    while (at < bytes.length) {
      const n = Math.min(bytes.length - at, this.#buf.length - this.#len);
      this.#buf.set(bytes.subarray(at, at + n), this.#len);
      this.#len += n;
      at += n;
      while (this.#len >= TAIL_WINDOW + WINDOW_OVERLAP) this.#cut(false, out);
    }
    return out;
  }

  /** The body ended: the windows of what is left. */
  end(): EngineRequest[] {
    const out: EngineRequest[] = [];
    while (this.#len > 0) this.#cut(true, out);
    return out;
  }

  /** Takes the verdict on one window. */
  record(result: Inspection): void {
    this.findings += result.findings.length;
    const top = result.findings[0];
    if (top !== undefined && (this.best === undefined || top.score > this.best.score)) {
      this.best = top;
    }
    this.blocking ??= result.blocking;
  }

  /** Cuts one window from the start of `#buf` into `out` and keeps what the next one needs. */
  #cut(final: boolean, out: EngineRequest[]): void {
    const buf = this.#buf;
    let cut = Math.min(this.#len, TAIL_WINDOW);
    let aligned = final && this.#len <= TAIL_WINDOW;
    if (!aligned) {
      const unit = this.#unitBefore(cut);
      if (unit > 0) {
        cut = unit;
        aligned = true;
      }
    }
    if (this.#base + cut > this.#judged) out.push(this.#request(buf.subarray(0, cut)));
    let next = aligned ? cut : cut - WINDOW_OVERLAP;
    if (!aligned) next = this.#carry(next);
    else this.#context = this.#json === undefined ? EMPTY : this.#jsonContext(next);
    this.#unitStart = aligned;
    buf.copyWithin(0, next, this.#len);
    this.#len -= next;
    this.#base += next;
  }

  /** Where the last unit that starts in `#buf[1..cut]` starts, or -1 for none. */
  #unitBefore(cut: number): number {
    const buf = this.#buf;
    switch (this.#shape) {
      case "form":
        return buf.lastIndexOf(0x26, cut - 1) + 1 || -1;
      case "xml":
        return buf.lastIndexOf(0x3e, cut - 1) + 1 || -1;
      case "multipart": {
        const d = lastIndexOf(buf, this.#delimiter, cut - this.#delimiter.length);
        return d > 0 ? d : -1;
      }
      default:
        return -1;
    }
  }

  /**
   * The context for a window starting at `next` inside a unit (the field or part the cut fell
   * in), set in `#context`; returns where the next window starts (earlier than `next` when it
   * would start inside a part's headers).
   */
  #carry(next: number): number {
    const buf = this.#buf;
    switch (this.#shape) {
      case "form": {
        const amp = buf.lastIndexOf(0x26, next - 1);
        if (amp < 0 && !this.#unitStart) return next;
        const start = amp + 1;
        const eq = buf.indexOf(0x3d, start);
        this.#context = eq >= 0 && eq < next && eq - start <= MAX_FIELD_NAME
          ? buf.slice(start, eq + 1)
          : EMPTY;
        return next;
      }
      case "multipart": {
        const d = lastIndexOf(buf, this.#delimiter, next - this.#delimiter.length);
        const at = d >= 0 ? d : this.#unitStart ? 0 : -1;
        if (at < 0) return next;
        const head = partHead(buf, at, this.#len);
        if (head === undefined || head.end > next) {
          // The window would start inside the headers: it starts at the delimiter instead.
          if (at > 0) {
            this.#context = EMPTY;
            return at;
          }
          return next;
        }
        this.#context = head.context;
        return next;
      }
      case "json":
        this.#context = this.#jsonContext(next);
        return next;
      default:
        this.#context = EMPTY;
        return next;
    }
  }

  /** The JSON that reopens the document at `#buf[next]`. */
  #jsonContext(next: number): Uint8Array {
    const json = this.#json!;
    json.feed(this.#buf, 0, next);
    return ENCODER.encode(json.prefix());
  }

  /** One window as a request of its own: the context that reopens it, then its bytes. */
  #request(window: Uint8Array): EngineRequest {
    const context = this.#context;
    // A copy: the buffer moves on before the caller judges.
    const body = new Uint8Array(context.length + window.length);
    body.set(context);
    body.set(window, context.length);
    return { method: "POST", path: "/", query: "", headers: this.#headers, body };
  }
}

/**
 * The header block of the part whose delimiter is at `at` (`\r\n--boundary` or, at the body's
 * start, `--boundary`), as a part of its own to put before its content: undefined when it does not
 * end within the buffer or {@link MAX_PART_HEAD}.
 */
function partHead(
  buf: Uint8Array,
  at: number,
  len: number,
): { readonly end: number; readonly context: Uint8Array } | undefined {
  const limit = Math.min(len, at + MAX_PART_HEAD);
  for (let i = at + 2; i + 3 < limit; i++) {
    if (buf[i] === 0x0d && buf[i + 1] === 0x0a && buf[i + 2] === 0x0d && buf[i + 3] === 0x0a) {
      // From the delimiter's dashes (without the line break before them) to the blank line.
      const from = buf[at] === 0x0d ? at + 2 : at;
      return { end: i + 4, context: buf.slice(from, i + 4) };
    }
  }
  return undefined;
}

/** The last index at or before `from` where `needle` starts in `hay`, or -1. */
function lastIndexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0]!;
  for (let i = Math.min(from, hay.length - needle.length); i >= 0; i--) {
    i = hay.lastIndexOf(first, i);
    if (i < 0) return -1;
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}
