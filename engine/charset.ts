/**
 * The character set a body declares (`Content-Type: ...; charset=ibm037`), and its decoding into
 * the text an upstream that honours it reads: UTF-8, UTF-16 and UTF-32 (either byte order, with or
 * without a byte order mark), the EBCDIC code pages 037, 500, 875 and 1140 (tables in
 * `charset_tables/`, each with its source), and every encoding of the WHATWG Encoding Standard
 * (ISO-8859, Windows-125x, KOI8, Mac, the CJK encodings) through `TextDecoder`. A body judged as
 * UTF-8 while its upstream reads it as EBCDIC is a body the engine never saw, so a declared set
 * that none of these decodes is reported as unknown, for the data plane to refuse.
 */
import IBM037 from "./charset_tables/ibm037.json" with { type: "json" };
import IBM500 from "./charset_tables/ibm500.json" with { type: "json" };
import IBM875 from "./charset_tables/ibm875.json" with { type: "json" };
import IBM1140 from "./charset_tables/ibm1140.json" with { type: "json" };

/** How one character set turns bytes into text. */
export interface Charset {
  /** The canonical name (`utf-16be`, `ibm037`, `windows-1252`). */
  readonly name: string;
  /** Whether ASCII bytes mean ASCII in it, so `&`, `=` and `%` of a form are what they look like. */
  readonly asciiCompatible: boolean;
  /** Bytes to text; invalid sequences become U+FFFD. */
  decode(bytes: Uint8Array): string;
}

/** What a content type says about its body's characters. */
export type BodyCharset =
  /** No charset, or a UTF-8 one (or one whose ASCII the normaliser reads, UTF-7): read as UTF-8. */
  | { readonly kind: "utf-8" }
  | { readonly kind: "charset"; readonly charset: Charset }
  /** A charset none of the decoders reads, or two that disagree. */
  | { readonly kind: "unknown"; readonly label: string };

const UTF8_BODY: BodyCharset = Object.freeze({ kind: "utf-8" });
const UTF8 = new TextDecoder("utf-8");
/** Every `charset` parameter of a content type, quoted or not. */
const CHARSET_PARAM = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/gi;
const MAY_DECLARE = /charset/i;
/** Labels longer than this name no character set (and are not worth a lookup). */
const MAX_LABEL = 40;

/**
 * The character set of a body from its content type.
 *
 * @param contentType the Content-Type header as received
 * @returns UTF-8 without a charset; the decoder, or `unknown` with the label as sent
 *
 * @example
 * ```ts
 * import { bodyCharset } from "./charset.ts";
 * const c = bodyCharset("application/x-www-form-urlencoded; charset=ibm037");
 * c.kind === "charset" && c.charset.decode(new Uint8Array([0x98, 0x7e, 0xf1])); // "q=1"
 * bodyCharset("text/plain; charset=x-unknown").kind; // "unknown"
 * ```
 */
export function bodyCharset(contentType: string): BodyCharset {
  if (!MAY_DECLARE.test(contentType)) return UTF8_BODY;
  let found: BodyCharset | undefined;
  for (const m of contentType.matchAll(CHARSET_PARAM)) {
    const label = (m[1] ?? m[2] ?? "").trim();
    const one = charsetOf(label);
    if (found === undefined) found = one;
    else if (!same(found, one)) return { kind: "unknown", label: contentType.slice(0, 120) };
  }
  return found ?? UTF8_BODY;
}

function same(a: BodyCharset, b: BodyCharset): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "charset" && b.kind === "charset") return a.charset.name === b.charset.name;
  return a.kind === "utf-8";
}

/**
 * The body's text: decoded by its declared charset, as UTF-8 without one (or with one the engine
 * does not know, which the data plane refuses before the engine sees it).
 *
 * @param bytes the body, or its inspected prefix
 * @param contentType the Content-Type header as received
 */
export function decodeBodyText(bytes: Uint8Array, contentType: string): string {
  const c = bodyCharset(contentType);
  return c.kind === "charset" ? c.charset.decode(bytes) : UTF8.decode(bytes);
}

const known = new Map<string, BodyCharset>();

function charsetOf(label: string): BodyCharset {
  const key = label.toLowerCase();
  const cached = known.get(key);
  if (cached !== undefined) return cached;
  const result = resolve(key, label);
  // Only labels that name a set are kept: what a client makes up is not worth the memory.
  if (result.kind !== "unknown") known.set(key, result);
  return result;
}

function resolve(key: string, label: string): BodyCharset {
  const unknown: BodyCharset = { kind: "unknown", label: label.slice(0, MAX_LABEL) };
  // `charset=` with nothing declares nothing.
  if (key.length === 0) return UTF8_BODY;
  if (key.length > MAX_LABEL) return unknown;
  const bare = key.replace(/^x-/, "").replace(/[^a-z0-9+]/g, "");
  if (bare === "utf8" || bare === "utf7" || bare === "unicode11utf8") return UTF8_BODY;
  const wide = WIDE.get(bare);
  if (wide !== undefined) return { kind: "charset", charset: wide };
  const ebcdic = ebcdicOf(bare);
  if (ebcdic !== undefined) return { kind: "charset", charset: ebcdic };
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(key);
  } catch {
    return unknown;
  }
  // WHATWG maps a few dangerous sets (ISO-2022-KR, HZ) to `replacement`: nothing of them is read.
  if (decoder.encoding === "replacement") return unknown;
  if (decoder.encoding === "utf-8") return UTF8_BODY;
  if (decoder.encoding === "utf-16le" || decoder.encoding === "utf-16be") {
    return { kind: "charset", charset: WIDE.get(decoder.encoding.replace("-", ""))! };
  }
  const name = decoder.encoding;
  return {
    kind: "charset",
    charset: { name, asciiCompatible: true, decode: (bytes) => decoder.decode(bytes) },
  };
}

// --- UTF-16 and UTF-32 ---

const UTF16LE = new TextDecoder("utf-16le");
const UTF16BE = new TextDecoder("utf-16be");
/** Code units looked at to tell the byte order of a body without a byte order mark. */
const SNIFF_UNITS = 512;

/**
 * Whether the zero bytes sit first in each code unit (big-endian ASCII: `00 27`), counted over
 * the first units: what a body without a byte order mark most likely is, as no text reads as ASCII
 * both ways.
 */
function zerosFirst(bytes: Uint8Array, unit: 2 | 4): boolean {
  let first = 0;
  let last = 0;
  const end = Math.min(bytes.length - (bytes.length % unit), SNIFF_UNITS * unit);
  for (let i = 0; i < end; i += unit) {
    if (bytes[i] === 0) first++;
    if (bytes[i + unit - 1] === 0) last++;
  }
  return first > last;
}

/** UTF-16 in the order its byte order mark names, or the one its bytes look like. */
function utf16(order: "le" | "be" | "any"): Charset {
  return {
    name: order === "any" ? "utf-16" : `utf-16${order}`,
    asciiCompatible: false,
    decode(bytes) {
      const b0 = bytes[0];
      const b1 = bytes[1];
      if (b0 === 0xff && b1 === 0xfe) return UTF16LE.decode(bytes);
      if (b0 === 0xfe && b1 === 0xff) return UTF16BE.decode(bytes);
      const be = order === "be" || (order === "any" && zerosFirst(bytes, 2));
      return (be ? UTF16BE : UTF16LE).decode(bytes);
    },
  };
}

/** UTF-32 in the order its byte order mark names, or the one its bytes look like. */
function utf32(order: "le" | "be" | "any"): Charset {
  return {
    name: order === "any" ? "utf-32" : `utf-32${order}`,
    asciiCompatible: false,
    decode(bytes) {
      let at = 0;
      let be = order === "be";
      if (bytes[0] === 0 && bytes[1] === 0 && bytes[2] === 0xfe && bytes[3] === 0xff) {
        be = true;
        at = 4;
      } else if (bytes[0] === 0xff && bytes[1] === 0xfe && bytes[2] === 0 && bytes[3] === 0) {
        be = false;
        at = 4;
      } else if (order === "any") be = zerosFirst(bytes, 4);
      const parts: string[] = [];
      const codes: number[] = [];
      for (let i = at; i + 3 < bytes.length; i += 4) {
        const cp = be
          ? ((bytes[i]! << 24) | (bytes[i + 1]! << 16) | (bytes[i + 2]! << 8) | bytes[i + 3]!) >>> 0
          : ((bytes[i + 3]! << 24) | (bytes[i + 2]! << 16) | (bytes[i + 1]! << 8) | bytes[i]!) >>>
            0;
        codes.push(cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? 0xfffd : cp);
        if (codes.length === 4096) {
          parts.push(String.fromCodePoint(...codes));
          codes.length = 0;
        }
      }
      if (bytes.length - at > 0 && (bytes.length - at) % 4 !== 0) codes.push(0xfffd);
      parts.push(String.fromCodePoint(...codes));
      return parts.join("");
    },
  };
}

/**
 * The wide encodings by their bare label (letters and digits only). `unicode` is .NET's name for
 * UTF-16LE and `unicodefffe` its big-endian one; `ucs2` and `ucs4` are the fixed-width names.
 */
const WIDE: ReadonlyMap<string, Charset> = new Map([
  ["utf16", utf16("any")],
  ["utf16le", utf16("le")],
  ["utf16be", utf16("be")],
  ["ucs2", utf16("any")],
  ["iso10646ucs2", utf16("any")],
  ["csunicode", utf16("any")],
  ["unicode", utf16("le")],
  ["unicodefeff", utf16("le")],
  ["unicodefffe", utf16("be")],
  ["utf32", utf32("any")],
  ["utf32le", utf32("le")],
  ["utf32be", utf32("be")],
  ["ucs4", utf32("any")],
  ["iso10646ucs4", utf32("any")],
]);

// --- EBCDIC ---

interface TableFile {
  readonly table: readonly string[];
}

/** A single-byte code page from its table: 16 rows of 16 hexadecimal code points. */
function singleByte(name: string, file: TableFile): Charset {
  const map = new Uint16Array(256);
  file.table.forEach((row, r) => {
    row.split(" ").forEach((hex, c) => map[r * 16 + c] = parseInt(hex, 16));
  });
  return {
    name,
    asciiCompatible: false,
    decode(bytes) {
      const parts: string[] = [];
      const CHUNK = 8192;
      const codes = new Uint16Array(Math.min(CHUNK, bytes.length));
      for (let i = 0; i < bytes.length; i += CHUNK) {
        const n = Math.min(CHUNK, bytes.length - i);
        for (let j = 0; j < n; j++) codes[j] = map[bytes[i + j]!]!;
        parts.push(String.fromCharCode(...codes.subarray(0, n)));
      }
      return parts.join("");
    },
  };
}

const EBCDIC: ReadonlyMap<number, Charset> = new Map([
  [37, singleByte("ibm037", IBM037)],
  [500, singleByte("ibm500", IBM500)],
  [875, singleByte("ibm875", IBM875)],
  [1140, singleByte("ibm1140", IBM1140)],
]);

/** `ibm037`, `cp037`, `ibm-37`, `csibm037`, `ccsid01140`, `037`, `x-ibm875` (already bare). */
const EBCDIC_NUMBERED = /^(?:cs)?(?:ibm|cp|cpibm|ccsid)?0*(37|500|875|1140)$/;
/** The code pages' other names (Java's, IANA's), bare. */
const EBCDIC_NAMES: ReadonlyMap<string, number> = new Map([
  ["ebcdiccpus", 37],
  ["ebcdiccpca", 37],
  ["ebcdiccpwt", 37],
  ["ebcdiccpnl", 37],
  ["csebcdiccpus", 37],
  ["csebcdiccpca", 37],
  ["csebcdiccpwt", 37],
  ["csebcdiccpnl", 37],
  ["ebcdiccpbe", 500],
  ["ebcdiccpch", 500],
  ["ebcdiccpbh", 500],
  ["ebcdicus037+euro", 1140],
]);

function ebcdicOf(bare: string): Charset | undefined {
  const m = EBCDIC_NUMBERED.exec(bare);
  const page = m !== null ? Number(m[1]) : EBCDIC_NAMES.get(bare);
  return page === undefined ? undefined : EBCDIC.get(page);
}
