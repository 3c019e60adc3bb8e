/**
 * A forgiving multipart/form-data splitter for inspection.
 *
 * It works on a Latin-1 view of the body (one character per byte) so binary parts keep
 * their length, and it accepts what lenient servers accept: missing final boundary (the
 * connector truncates bodies), LF instead of CRLF, parts without headers.
 */

/** One part of a multipart body. */
export interface Part {
  /** The field name, `""` when the part has none. */
  readonly name: string;
  /** The first file name the part gives, undefined for a form field. */
  readonly filename: string | undefined;
  /**
   * Every file name the part gives: `filename` and `filename*` both (RFC 7578 and 6266 let a
   * client send both; many parsers take `filename*`, others the first or the last).
   */
  readonly filenames: readonly string[];
  /**
   * Whether every framework reads the part as an uploaded file rather than a form field: one
   * Content-Disposition with a single, plain, non-empty `filename` (PHP ignores `filename*`; Go
   * and ASP.NET read `filename=""` as a field) and a Content-Type (formidable reads a part without
   * one as a field). Browsers send exactly that for every file; anything else may be a field to
   * some application and is judged as one.
   */
  readonly file: boolean;
  /** The part's content type, lower-case, `""` when absent. */
  readonly contentType: string;
  /** Part headers other than Content-Disposition, names lower-case, values Latin-1. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** Part content as Latin-1 (one character per byte). */
  readonly value: string;
}

const NAME = /\bname\s*=\s*(?:"([^"]*)"|([^\s;]+))/i;
/** A file name parameter, double- or single-quoted (PHP's parser takes both) or bare. */
const FILENAME = /\bfilename\*?\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s;]+))/gi;
/** At most this many file names a part (one or two in any real client's part). */
const MAX_FILENAMES = 4;
const MAX_PARTS = 256;

/**
 * Splits a body into parts; broken input yields the parts that could be read.
 *
 * @param body the body as Latin-1 text
 * @param boundary the boundary from the content type, without the leading dashes
 */
export function parseMultipart(body: string, boundary: string): Part[] {
  const parts: Part[] = [];
  const delimiter = `--${boundary}`;
  let at = body.indexOf(delimiter);
  while (at >= 0 && parts.length < MAX_PARTS) {
    const start = at + delimiter.length;
    const next = body.indexOf(delimiter, start);
    // A close delimiter ends the body for a server only at the start of a line, and what
    // follows the real one is an epilogue servers ignore: parsing goes on at the next delimiter,
    // so `x--B--` inside a value does not hide the parts after it.
    if (body.startsWith("--", start)) {
      at = next;
      continue;
    }
    const chunk = body.slice(start, next < 0 ? body.length : next);
    const part = parsePart(chunk);
    if (part !== undefined) parts.push(part);
    at = next;
  }
  return parts;
}

function parsePart(chunk: string): Part | undefined {
  const crlf = chunk.startsWith("\r\n");
  const text = chunk.replace(LEADING_NEWLINE, "");
  let split = text.indexOf("\r\n\r\n");
  let gap = 4;
  if (split < 0) {
    split = text.indexOf("\n\n");
    gap = 2;
  }
  if (split < 0) return undefined;
  const head = text.slice(0, split);
  let value = text.slice(split + gap);
  if (value.endsWith("\r\n")) value = value.slice(0, -2);
  else if (value.endsWith("\n")) value = value.slice(0, -1);
  let disposition = "";
  let dispositions = 0;
  let contentType = "";
  const headers: Array<readonly [string, string]> = [];
  for (const line of head.split(LINE)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const headerValue = line.slice(colon + 1).trim();
    if (name === "content-disposition") {
      disposition = headerValue;
      dispositions++;
    } else {
      if (name === "content-type") contentType = headerValue.toLowerCase();
      if (headers.length < MAX_PART_HEADERS) headers.push([name, headerValue]);
    }
  }
  const n = NAME.exec(disposition);
  const filenames: string[] = [];
  for (const f of disposition.matchAll(FILENAME)) {
    const filename = f[1] ?? f[2] ?? f[3] ?? "";
    if (!filenames.includes(filename)) filenames.push(filename);
    if (filenames.length === MAX_FILENAMES) break;
  }
  return {
    name: n?.[1] ?? n?.[2] ?? "",
    filename: filenames[0],
    filenames,
    file: crlf && gap === 4 && dispositions === 1 && contentType !== "" && browserHead(head) &&
      plainFilename(disposition),
    contentType,
    headers,
    value,
  };
}

const MAX_PART_HEADERS = 8;

/**
 * A part head as browsers write it, which every parser splits into the same headers: CRLF line
 * ends only (formidable keeps a bare LF inside the header value, Django splits on CRLF only),
 * every line `Name: value` with no folding (PHP appends a line without a colon, or one that
 * starts with a space, to the header before it), one Content-Type, and no transfer encoding
 * (formidable decodes base64 and quoted-printable, so the file on disk is not what was judged).
 */
function browserHead(head: string): boolean {
  let types = 0;
  for (const line of head.split("\r\n")) {
    const m = HEAD_LINE.exec(line);
    if (m === null) return false;
    const name = (m[1] ?? "").toLowerCase();
    if (name === "content-type") types++;
    else if (name === "content-transfer-encoding") return false;
  }
  return types === 1;
}

/** One header line as a browser writes it; a bare CR or LF anywhere fails it. */
const HEAD_LINE = /^([A-Za-z0-9-]+):[ \t]*[^\s][^\r\n]*$/;

/**
 * A disposition as browsers and common clients write it: `form-data`, then `; key=value`
 * parameters, each value a double-quoted string without backslashes or a plain token. PHP reads
 * single quotes as quotes (`x='; filename=a.txt'` hides the name), does not trim a key
 * (`filename =a` is no file name to it) and skips only `\\"` as an escape; every other parser
 * agrees with this shape.
 */
const BROWSER_DISPOSITION =
  /^form-data(?:;[ \t]*[A-Za-z][A-Za-z0-9_-]*=(?:"[^"\\\r\n]*"|[A-Za-z0-9_.+-]+))+$/i;

/** Where `filename` is written in a disposition, whatever follows it (`filename*`, spaces). */
const FILENAME_WORD = /filename/gi;

/**
 * Whether a disposition's parameters, read as RFC 7578 parsers read them (quoted strings kept
 * whole, so `name="a; filename=b.txt"` names no file), hold exactly one file name, `filename=`
 * itself, not empty, and no other mention of `filename` anywhere.
 */
function plainFilename(disposition: string): boolean {
  if ((disposition.match(FILENAME_WORD) ?? []).length !== 1) return false;
  if (!BROWSER_DISPOSITION.test(disposition)) return false;
  let found = false;
  for (const param of dispositionParams(disposition)) {
    const eq = param.indexOf("=");
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== "filename") continue;
    const value = param.slice(eq + 1).trim();
    const bare = value.length >= 2 && (value[0] === '"' || value[0] === "'") &&
        value[value.length - 1] === value[0]
      ? value.slice(1, -1)
      : value;
    found = bare.trim() !== "";
  }
  return found;
}

/** The `;`-separated pieces of a disposition, a `;` inside double quotes not separating. */
function dispositionParams(disposition: string): string[] {
  const out: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < disposition.length; i++) {
    const c = disposition[i];
    if (c === "\\" && quoted) i++;
    else if (c === '"') quoted = !quoted;
    else if (c === ";" && !quoted) {
      out.push(disposition.slice(start, i));
      start = i + 1;
    }
  }
  out.push(disposition.slice(start));
  return out;
}

const LEADING_NEWLINE = /^\r?\n/;
const LINE = /\r?\n/;
