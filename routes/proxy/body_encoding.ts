/**
 * Request bodies sent with a `Content-Encoding`: decoded for inspection only (the upstream
 * receives the bytes as the client sent them), so a gzipped JSON body is judged like a plain
 * one. Decoding stops at the inspection limit: a decompression bomb costs the inspection prefix,
 * never its decoded size. A body that claims a coding the data plane cannot decode (an unknown
 * coding, codings stacked on each other, corrupt data) yields a protocol finding instead.
 */
import {
  constants,
  createBrotliDecompress,
  createGunzip,
  createInflate,
  createInflateRaw,
} from "node:zlib";
import type { Transform } from "node:stream";

/** A content-coding decoder: a transform that counts the input it took. */
export type Decoder = Transform & { readonly bytesWritten: number };
import type { Finding } from "../../engine/types.ts";
import { confidenceOf } from "../../engine/make_finding.ts";
import { bodyCharset } from "../../engine/charset.ts";
import { concatChunks } from "../../net/chunks.ts";

/** What the inspection sees of an encoded body. */
export type DecodedBody =
  | {
    readonly kind: "decoded";
    readonly bytes: Uint8Array | undefined;
    /** Set when the body is padding past the inspected prefix (see {@link PADDING_RATIO}). */
    readonly finding?: Finding;
  }
  | { readonly kind: "undecodable"; readonly finding: Finding };

/**
 * Decoded bytes per byte on the wire from which a body that runs past the inspected prefix is
 * padding (`protocol.padded_body`): a compressed body can fill the prefix for a few bytes and
 * stream the rest uninspected, and real data stays far below this ratio where filler and bombs do
 * not (docs/detection.md, "Where the engine reads (placements)", "Padding past the prefix").
 */
export const PADDING_RATIO = 100;
/**
 * The padding finding's score: medium, so it blocks at `strict` and is logged at `balanced` and
 * `low`: repetitive real bodies pass the ratio too and cheap filler steps under it, so it is a
 * signal, not a wall (docs/reviews/2026-11-26-hdet-2-uploads-and-prefix.md).
 */
const PADDING_SCORE = 55;

/** Output is handed over in pieces of this size, so stopping at the limit wastes at most one. */
const CHUNK = 16384;
/**
 * Truncated input ends without an error: the data plane may hold only the inspected prefix of a
 * long body, and what a decoder gets out of a cut stream is what is judged.
 */
const ZLIB = { finishFlush: constants.Z_SYNC_FLUSH, chunkSize: CHUNK };
const BROTLI = { finishFlush: constants.BROTLI_OPERATION_FLUSH, chunkSize: CHUNK };

/**
 * Whether a Content-Encoding value asks for no decoding: empty, or only `identity`.
 *
 * @param value the header value as received
 */
export function isIdentity(value: string): boolean {
  for (const part of value.split(",")) {
    const t = part.trim().toLowerCase();
    if (t !== "" && t !== "identity") return false;
  }
  return true;
}

/**
 * Whether a Content-Encoding value is only `aes128gcm` (RFC 8188: content encrypted end to end,
 * what Web Push sends). No one between the two ends can read it, so its body is judged as sent,
 * as a body without a coding is, instead of as a coding the data plane does not support.
 *
 * @param value the header value as received (not identity: see {@link isIdentity})
 */
export function isEncrypted(value: string): boolean {
  return value.trim().toLowerCase() === "aes128gcm";
}

/**
 * Decodes the inspected part of a body for the engine.
 *
 * @param value the Content-Encoding value (not identity: see {@link isIdentity})
 * @param bytes the body, or its inspected prefix
 * @param limit the decoded bytes the engine inspects at most
 */
export function decodeBody(value: string, bytes: Uint8Array, limit: number): Promise<DecodedBody> {
  const codings = value.split(",").map((t) => t.trim().toLowerCase()).filter((t) =>
    t !== "" && t !== "identity"
  );
  if (codings.length > 1) {
    return Promise.resolve(undecodable("protocol.stacked_encoding", value));
  }
  const coding = codings[0]!;
  if (coding === "br" && brotliWindowBits(bytes) > BROTLI_MAX_WBITS) {
    return Promise.resolve(undecodable("protocol.unsupported_encoding", value));
  }
  const decoder = createDecoder(coding, bytes);
  if (decoder === undefined) {
    return Promise.resolve(undecodable("protocol.unsupported_encoding", value));
  }
  return new Promise((resolve) => {
    const parts: Uint8Array[] = [];
    let total = 0;
    let settled = false;
    const finish = (result: DecodedBody) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    const done = () =>
      finish({ kind: "decoded", bytes: total === 0 ? undefined : concatChunks(parts, total) });
    decoder.on("data", (chunk: Uint8Array) => {
      if (settled) return;
      const room = limit - total;
      const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
      parts.push(piece);
      total += piece.length;
      if (total >= limit) {
        // What the decoder took to fill the prefix: more was left to decode, so the rest of
        // the body streams uninspected, and a prefix that cost almost nothing is padding.
        const used = decoder.bytesWritten;
        decoder.destroy();
        const body = concatChunks(parts, total);
        finish(
          used > 0 && used * PADDING_RATIO <= total
            ? { kind: "decoded", bytes: body, finding: padded(value, total, used) }
            : { kind: "decoded", bytes: body },
        );
      }
    });
    decoder.on("end", done);
    decoder.on("error", () => finish(undecodable("protocol.undecodable_body", value)));
    decoder.end(bytes);
  });
}

/**
 * A decoder for one content coding (lower case, not stacked), or undefined for one the data plane
 * does not decode.
 *
 * @param coding `gzip`, `x-gzip`, `deflate` or `br`
 * @param first the body's first bytes (raw deflate has no zlib header)
 */
export function createDecoder(coding: string, first: Uint8Array): Decoder | undefined {
  if (coding === "gzip" || coding === "x-gzip") return createGunzip(ZLIB);
  // RFC 9110's deflate is the zlib format; some clients send raw deflate, which servers accept.
  if (coding === "deflate") return zlibHeader(first) ? createInflate(ZLIB) : createInflateRaw(ZLIB);
  if (coding === "br") return createBrotliDecompress(BROTLI);
  return undefined;
}

/**
 * The shortest run of printable bytes in a body as sent that {@link readableText} keeps: long
 * enough that compressed data seldom holds one by chance, while text someone put there (a gzip
 * header's name, comment or extra field, bytes after the compressed stream) is a run as long as
 * the text (docs/detection.md, "Where the engine reads (placements)", "Only the text in the raw
 * bytes is judged").
 */
export const TEXT_RUN = 16;

/**
 * What an upstream that ignores the Content-Encoding reads as text in a body as sent: its runs of
 * printable ASCII (with tab, CR and LF) of at least `min` bytes, each on a line of its own, or
 * undefined when there is none. The binary between them (compressed data) is dropped.
 *
 * @param bytes the body, or its inspected prefix, as sent
 * @param min the shortest run kept
 */
export function readableText(bytes: Uint8Array, min = TEXT_RUN): Uint8Array | undefined {
  const out = new Uint8Array(bytes.length);
  let n = 0;
  let start = -1;
  for (let i = 0; i <= bytes.length; i++) {
    const b = i < bytes.length ? bytes[i]! : 0;
    if ((b >= 0x20 && b < 0x7f) || b === 0x09 || b === 0x0a || b === 0x0d) {
      if (start < 0) start = i;
      continue;
    }
    if (start >= 0 && i - start >= min) {
      // Runs are apart by at least one dropped byte, so the separators fit in `out`.
      if (n > 0) out[n++] = 0x0a;
      out.set(bytes.subarray(start, i), n);
      n += i - start;
    }
    start = -1;
  }
  return n === 0 ? undefined : out.subarray(0, n);
}

/**
 * What an upstream that ignores the Content-Encoding reads as text in a body as sent: a gzip
 * header's extra field, file name and comment whole, since someone put them there (a form feed, or
 * a control or high byte inside an SQL comment, would otherwise cut an attack into runs shorter than
 * {@link TEXT_RUN} that the upstream still reads as one), then the {@link readableText} of the rest,
 * each on a line of its own; undefined when there is none.
 *
 * @param bytes the body, or its inspected prefix, as sent
 */
export function sentText(bytes: Uint8Array): Uint8Array | undefined {
  const fields = gzipHeaderFields(bytes);
  if (fields === undefined) return readableText(bytes);
  const parts = [...fields.texts];
  const rest = readableText(bytes.subarray(fields.end));
  if (rest !== undefined) parts.push(rest);
  if (parts.length === 0) return undefined;
  const total = parts.reduce((n, p) => n + p.length, 0) + parts.length - 1;
  const out = new Uint8Array(total);
  let n = 0;
  for (const part of parts) {
    if (n > 0) out[n++] = 0x0a;
    out.set(part, n);
    n += part.length;
  }
  return out;
}

/**
 * A gzip member's header fields (RFC 1952 §2.3: FEXTRA, FNAME, FCOMMENT, in that order) and where
 * its compressed data starts, or undefined when the bytes do not start with a gzip header. A field
 * cut by the end of the prefix is taken as far as it goes.
 */
function gzipHeaderFields(
  bytes: Uint8Array,
): { readonly texts: Uint8Array[]; readonly end: number } | undefined {
  if (bytes.length < 10 || bytes[0] !== 0x1f || bytes[1] !== 0x8b || bytes[2] !== 8) {
    return undefined;
  }
  const flags = bytes[3]!;
  const texts: Uint8Array[] = [];
  let at = 10;
  if (flags & 4) {
    const length = at + 1 < bytes.length ? bytes[at]! | (bytes[at + 1]! << 8) : 0;
    const field = bytes.subarray(at + 2, at + 2 + length);
    if (field.length > 0) texts.push(field);
    at = Math.min(bytes.length, at + 2 + length);
  }
  for (const flag of [8, 16]) {
    if ((flags & flag) === 0) continue;
    let zero = bytes.indexOf(0, at);
    if (zero < 0) zero = bytes.length;
    if (zero > at) texts.push(bytes.subarray(at, zero));
    at = Math.min(bytes.length, zero + 1);
  }
  return { texts, end: at };
}

/**
 * The largest Brotli window decoded: 4 MiB, what Brotli's encoder declares by default (Node's, which
 * is the reference library's, at every size and quality). The decoder allocates the window the
 * stream declares, so a tiny bomb asking for more would cost that much memory a request
 * (docs/detection.md, "Brotli's window is capped at 4 MiB").
 */
const BROTLI_MAX_WBITS = 22;

/**
 * The window a Brotli stream declares (RFC 7932 §9.1: WBITS in its first bits, least significant
 * first); a large-window stream (an extension past the RFC) counts as 31.
 */
export function brotliWindowBits(bytes: Uint8Array): number {
  if (bytes.length === 0) return 16;
  const b = bytes[0]!;
  if ((b & 1) === 0) return 16;
  const n = (b >> 1) & 7;
  if (n !== 0) return 17 + n;
  const m = (b >> 4) & 7;
  if (m === 1) return 31;
  return m === 0 ? 17 : 8 + m;
}

/** A zlib stream header (RFC 1950): method 8, and the two bytes a multiple of 31. */
function zlibHeader(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && (bytes[0]! & 0x0f) === 8 && ((bytes[0]! << 8) | bytes[1]!) % 31 === 0;
}

function padded(value: string, decoded: number, used: number): Finding {
  return {
    class: "request-smuggling",
    confidence: confidenceOf(PADDING_SCORE),
    score: PADDING_SCORE,
    location: "header:content-encoding",
    evidence: `${value.slice(0, 40)}: ${decoded} bytes inspected from ${used} sent, more follow`,
    ruleId: "protocol.padded_body",
  };
}

function undecodable(ruleId: string, value: string): DecodedBody {
  return { kind: "undecodable", finding: codingFinding(ruleId, value) };
}

/**
 * A protocol finding on a body's Content-Encoding (`protocol.undecodable_body` and kin).
 *
 * @param ruleId the rule
 * @param value the Content-Encoding value as received
 */
export function codingFinding(ruleId: string, value: string): Finding {
  return {
    class: "request-smuggling",
    confidence: confidenceOf(92),
    score: 92,
    location: "header:content-encoding",
    evidence: value.slice(0, 120),
    ruleId,
  };
}

const MULTIPART = /^\s*multipart\//i;
/** A body the engine cannot read is one it cannot vouch for: as sure as an undecodable coding. */
const CHARSET_SCORE = 92;

/**
 * A text body declaring a charset the engine cannot decode (`protocol.unsupported_charset`), or
 * undefined. Every body but a multipart one is read as text in its declared charset (a multipart
 * body's parts declare their own), so an upstream that honours `charset=ibm1047` would read what
 * the engine judged as UTF-8 as something else (docs/data-plane.md, "Request bodies and
 * encodings").
 *
 * @param contentType the Content-Type header as received, if any
 */
export function unsupportedCharset(contentType: string | undefined): Finding | undefined {
  if (contentType === undefined || MULTIPART.test(contentType)) return undefined;
  if (bodyCharset(contentType).kind !== "unknown") return undefined;
  return {
    class: "request-smuggling",
    confidence: confidenceOf(CHARSET_SCORE),
    score: CHARSET_SCORE,
    location: "header:content-type",
    evidence: contentType.slice(0, 120),
    ruleId: "protocol.unsupported_charset",
  };
}
