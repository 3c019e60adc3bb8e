/**
 * Extraction from request bodies: form fields, JSON strings and keys, XML and SOAP element
 * text and attributes, multipart fields with their file names and part headers, GraphQL
 * queries, and whole text bodies of any other (or no) content type.
 *
 * Structured readers are linear and lenient (a body cut at the inspection limit still
 * yields its values). When a body holds more values than the request may have inputs, its
 * text is also judged whole, so values past the cap are not invisible.
 */

import type { Input } from "./types.ts";
import { MAX_INPUTS, push } from "./extract_push.ts";
import { addPairs } from "./extract_url.ts";
import { isPlainSegment } from "./char_classes.ts";
import { parseMultipart, type Part } from "./multipart.ts";
import { scanJson } from "./json_scan.ts";
import { readXml } from "./xml_reader.ts";
import { graphqlStrings } from "./graphql.ts";
import { percentDecode } from "./normalize.ts";
import { ArrayPath } from "./array_path.ts";
import { bodyCharset, type Charset } from "./charset.ts";
import { WINDOW_OVERLAP } from "./limits.ts";

/**
 * Every boundary a server may read from a content type: parsers take the first `boundary`
 * (PHP finds the word anywhere, even inside another parameter's quotes), the last (a map of
 * parameters) or stop an unquoted one at a comma (PHP), so a type naming two boundaries has the
 * body split by each of them.
 */
const BOUNDARY = /boundary=(?:"([^"]+)"|([^\s;]+))/gi;
const MAX_BOUNDARIES = 4;

/** The boundaries a multipart content type names, in the order a server may take them. */
export function boundariesOf(contentType: string): string[] {
  const out: string[] = [];
  for (const m of contentType.matchAll(BOUNDARY)) {
    const boundary = m[1] ?? m[2] ?? "";
    for (const b of [boundary, boundary.split(",")[0] ?? ""]) {
      if (b !== "" && !out.includes(b) && out.length < MAX_BOUNDARIES) out.push(b);
    }
  }
  return out;
}
const UTF8 = new TextDecoder("utf-8", { fatal: false });
/** JSON keys are only worth a look when they are not plain identifiers (`$where`, `<x>`). */
const PLAIN_KEY = /^[A-Za-z0-9_-]*$/;
/** Paths that serve GraphQL, where a `query` value is a GraphQL document. */
export const GRAPHQL_PATH = /graphql|graphiql|\/gql(?:$|\/)/i;
/** A form body sent without a content type: `name=value` pairs and nothing else. */
const FORM_SHAPE = /^[\w.%[\]-]+=[^\s]*$/;

/** Where the body readers put the inputs, and what they need from the request. */
export interface BodyContext {
  /** The inputs collected so far. */
  readonly out: Input[];
  readonly contentType: string;
  /** True when the request path serves GraphQL. */
  readonly graphqlPath: boolean;
  /**
   * When given, the readers that know where their values start (forms, JSON) record, for each
   * input they add to the body's own, the offset in the text where its source starts; emptied
   * when the text did not read cleanly, so what the values leave out is not skipped.
   */
  readonly marks?: number[];
}

/**
 * Adds the inputs of a body.
 *
 * @param body the body prefix the connector captured
 * @param ctx the inputs collected so far, content type and path facts
 */
export function addBody(body: Uint8Array, ctx: BodyContext): void {
  const out = ctx.out;
  const type = ctx.contentType.toLowerCase();
  if (type.startsWith("multipart/")) {
    const boundaries = boundariesOf(ctx.contentType);
    if (boundaries.length > 0) {
      const text = latin1(body);
      for (const boundary of boundaries) addMultipart(text, boundary, ctx);
      return;
    }
  }
  const charset = bodyCharset(ctx.contentType);
  const text = charset.kind === "charset" ? charset.charset.decode(body) : UTF8.decode(body);
  const before = out.length;
  const marks: number[] = [];
  addText(text, type, "", { ...ctx, marks });
  if (charset.kind === "charset" && type.includes("x-www-form-urlencoded")) {
    addCharsetForm(out, body, charset.charset);
  }
  if (out.length >= MAX_INPUTS) {
    // More values than inputs: the text is judged too, in place of the last ones, from where
    // the first value left out starts (and the overlap of a window before it, so a fragment
    // that ends there is whole), or whole when that place is not known.
    const keep = Math.max(before, MAX_INPUTS - 1);
    const mark = marks[keep - before];
    out.length = keep;
    const from = mark === undefined ? 0 : Math.max(0, mark - WINDOW_OVERLAP);
    push(out, "body", "", from === 0 ? text : text.slice(from));
  }
}

/** A form body that is all printable ASCII: percent escapes, `+`, `&` and `=` as they look. */
const ASCII_FORM = /^[\x20-\x7e\t\r\n]*$/;

/**
 * A form in a declared charset, as ASP.NET and Java servlets read it: split at the ASCII `&` and
 * `=`, each name and value percent-decoded to bytes and those decoded by the charset, so
 * `q=%00%31%00%27...` under `charset=utf-16` is `q=1'...` to the application. Only pairs whose
 * reading differs from the UTF-8 one the normaliser makes are added.
 */
function addCharsetForm(out: Input[], body: Uint8Array, charset: Charset): void {
  const raw = latin1(body);
  if (raw.indexOf("%") < 0 || !ASCII_FORM.test(raw)) return;
  for (const pair of raw.split("&")) {
    if (pair.indexOf("%") < 0) continue;
    const eq = pair.indexOf("=");
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const rawValue = eq < 0 ? "" : pair.slice(eq + 1);
    // A name without escapes is named as it reads, whatever its bytes mean in the charset.
    const escaped = rawName.indexOf("%") >= 0;
    const name = escaped ? charset.decode(formBytes(rawName)) : rawName;
    const value = charset.decode(formBytes(rawValue));
    if (value !== percentDecode(rawValue, true) && !push(out, "form", name, value)) return;
    if (escaped && name !== percentDecode(rawName, true) && !isPlainSegment(name)) {
      if (!push(out, "form_name", name, name)) return;
    }
  }
}

/** One form component's bytes: `+` a space, `%XX` a byte, anything else as it is. */
function formBytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const hi = c === 0x25 ? hexDigit(text.charCodeAt(i + 1)) : -1;
    const lo = hi < 0 ? -1 : hexDigit(text.charCodeAt(i + 2));
    if (lo >= 0) {
      bytes[n++] = hi * 16 + lo;
      i += 2;
    } else bytes[n++] = c === 0x2b ? 0x20 : c;
  }
  return bytes.subarray(0, n);
}

function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const lower = c | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/** Reads one text by its content type (or its shape when the type says nothing). */
function addText(text: string, type: string, prefix: string, ctx: BodyContext): void {
  const out = ctx.out;
  if (type.includes("x-www-form-urlencoded")) addPairs(out, text, "form", ctx.marks);
  else if (type.includes("graphql")) addGraphql(out, text, `${prefix}.query`);
  else if (type.includes("json")) addJson(text, prefix, ctx);
  else if (type.includes("xml")) addXml(out, text, prefix, !type.includes("svg"));
  else if (isText(text)) addSniffed(text, prefix, ctx);
}

/** Bodies without a useful content type are read by their shape, as lenient frameworks do. */
function addSniffed(text: string, prefix: string, ctx: BodyContext): void {
  const out = ctx.out;
  const start = text.trimStart();
  const first = start[0];
  if (first === "{" || first === "[") addJson(text, prefix, ctx);
  else if (first === "<") addXml(out, text, prefix, false);
  else if (prefix === "" && FORM_SHAPE.test(text)) addPairs(out, text, "form", ctx.marks);
  else push(out, prefix === "" ? "body" : "multipart", prefix, text);
}

function addJson(text: string, prefix: string, ctx: BodyContext): void {
  const out = ctx.out;
  const source = prefix === "" ? "json" : "multipart";
  // Array paths are only collected once an element names the prototype (one compare a value),
  // in a text that names it (or escapes a letter of it: `"\u005f_proto__"`).
  const arrays = text.indexOf("proto") >= 0 || text.indexOf("constructor") >= 0 ||
      text.indexOf("\\u") >= 0
    ? new ArrayPath()
    : undefined;
  const read = (path: string, value: string, key: boolean): boolean => {
    const name = prefix === "" ? path : `${prefix}.${path}`;
    if (arrays !== undefined && !key) {
      const joined = arrays.take(name, value);
      if (joined !== undefined && !push(out, source, joined[0], joined[1])) return false;
    }
    if (key) {
      // A plain key can still climb into the prototype (`__proto__`, `constructor.prototype`).
      if (PLAIN_KEY.test(value) && name.indexOf("proto") < 0) return true;
      return push(out, prefix === "" ? "json_key" : "multipart", name, value);
    }
    if (path === "query" && (ctx.graphqlPath || graphqlStrings(value) !== undefined)) {
      addGraphql(out, value, `${prefix}.query`);
      return out.length < MAX_INPUTS;
    }
    return push(out, source, name, value);
  };
  const marks = ctx.marks;
  const base = out.length;
  const clean = marks === undefined
    ? scanJson(text, read)
    : scanJson(text, (path, value, key, at) => {
      const more = read(path, value, key);
      while (marks.length < out.length - base) marks.push(at);
      return more;
    });
  if (marks !== undefined && !clean) marks.length = 0;
  const joined = arrays?.end();
  if (joined !== undefined) push(out, source, joined[0], joined[1]);
  // Text that is not JSON at all (`{{7*7}}`, `{${jndi:...}}`) is judged as it came.
  if (!clean) push(out, prefix === "" ? "body" : "multipart", prefix, text);
}

/**
 * An XML document: the whole of it, then each element's text and attribute. A document declared
 * as XML (`application/soap+xml`) is an application's data, so its whole is judged only for what
 * a document carries (a DTD's entities, SSI); its markup is the format's. Markup nobody declared
 * as XML (a `text/plain` body or one without a type that starts with `<`) and SVG, which browsers
 * render and run, are text an application may echo into a page: the whole is judged as any
 * value is (`<script src=//evil.example/x.js>`).
 *
 * @param declared whether the content type names XML (other than SVG)
 */
function addXml(out: Input[], text: string, prefix: string, declared = true): void {
  const source = prefix === "" ? "xml" : "multipart";
  // The whole document carries the DTD (XXE) and whatever does not parse as XML.
  const at = out.length;
  push(out, source, prefix, text);
  const parsed = readXml(text, (path, value) => push(out, source, `${prefix}${path}`, value));
  const doc = out[at];
  if (declared && parsed && doc !== undefined && doc.value === text) {
    out[at] = { ...doc, structured: true };
  }
}

/**
 * A GraphQL document (`graphql.query`), plus each of its string arguments
 * (`graphql.query.id`): an injection in an argument is judged without the query around it.
 */
export function addGraphql(out: Input[], doc: string, name: string): void {
  push(out, "graphql", name, doc);
  for (const s of graphqlStrings(doc) ?? []) {
    if (!push(out, "graphql", s.name.length > 0 ? `${name}.${s.name}` : name, s.value)) return;
  }
}

/** Adds the GraphQL document of a `query` parameter on a GraphQL path (GET requests). */
export function addGraphqlQuery(out: Input[], query: string): void {
  for (const pair of query.split("&")) {
    if (pair.startsWith("query=")) {
      addGraphql(out, percentDecode(pair.slice(6), true), ".query");
    }
  }
}

function addMultipart(body: string, boundary: string, ctx: BodyContext): void {
  const out = ctx.out;
  for (const part of parseMultipart(body, boundary)) {
    const name = part.name;
    if (!isPlainSegment(name)) push(out, "multipart", `${name}.name`, name);
    for (const filename of part.filenames) push(out, "multipart", `${name}.filename`, filename);
    for (const [header, value] of part.headers) {
      if (header !== "content-type" || !PLAIN_TYPE.test(value)) {
        push(out, "multipart", `${name}.${header}`, value);
      }
    }
    // Only an uploaded file is skipped as binary: any other part is a form value to some
    // framework (`filename=""` is one to Go and ASP.NET), and control bytes before a payload
    // (`\x01` x 30, `'\0 or 1=1--`) do not keep an application from reading it as text.
    const content = quotedPrintable(part) ? decodeQuotedPrintable(part.value) : part.value;
    // A part in a declared charset (`text/plain; charset=utf-16`) is read in it, text or not.
    const charset = part.contentType === "" ? undefined : bodyCharset(part.contentType);
    const declared = charset?.kind === "charset"
      ? charset.charset.decode(bytesOfLatin1(content))
      : undefined;
    if (part.file && !isText(declared ?? part.value)) continue;
    const value = declared ?? UTF8.decode(bytesOfLatin1(content));
    if (part.file && !DATA_TYPE.test(part.contentType)) {
      // An uploaded file is the user's document, not a value the application reads: it is
      // judged whole, for what a server runs or a browser renders (see inspect.ts).
      if (!push(out, "multipart", name, value)) return;
      const last = out[out.length - 1];
      if (last !== undefined && last.value === value && last.name === name) {
        out[out.length - 1] = { ...last, upload: isMarkup(part) ? "markup" : "file" };
      }
      continue;
    }
    if (
      part.contentType === "" || part.contentType.startsWith("text/plain") || !isText(value)
    ) {
      push(out, "multipart", name, value);
    } else addText(value, part.contentType, name, ctx);
  }
}

/**
 * Part types an application reads as data whatever the part's file name: a browser sends
 * `FormData.append("meta", new Blob([json], { type: "application/json" }))` with
 * `filename="blob"`, and Spring's `@RequestPart` binds it like any JSON body. XML stays a
 * document (a feed, an export): its parser attacks are judged either way.
 */
const DATA_TYPE =
  /^(?:application\/(?:[\w.-]+\+)?json|text\/json|application\/x-www-form-urlencoded|application\/graphql)\b/;

/** Whether a part says its content is quoted-printable, which Go's multipart reader decodes. */
function quotedPrintable(part: Part): boolean {
  return part.headers.some(([h, v]) =>
    h === "content-transfer-encoding" && v.trim().toLowerCase() === "quoted-printable"
  );
}

const QP_ESCAPE = /=\r?\n|=([0-9A-Fa-f]{2})/g;

/** Quoted-printable to the bytes it stands for (Latin-1 in, Latin-1 out). */
function decodeQuotedPrintable(text: string): string {
  return text.replace(
    QP_ESCAPE,
    (_, hex: string | undefined) => hex === undefined ? "" : String.fromCharCode(parseInt(hex, 16)),
  );
}

/** File names a browser renders as a page or a drawing when the site serves them back. */
const MARKUP_NAME = /\.(?:html?|xht(?:ml)?|svgz?|xml|xslt?|shtml?|mht(?:ml)?)$|^[^.]*$/i;
/**
 * What a server drops from a stored name before it picks the type it serves: Windows' trailing
 * dots and spaces and `::$DATA`, and IIS's `;` and what follows (`page.html;.txt`).
 */
const SERVED_AS = /;.*$|::\$data$|[.\s]+$/is;
/** Content types a browser renders as a page or a drawing. */
const MARKUP_TYPE =
  /^(?:text\/html|application\/xhtml\+xml|image\/svg\+xml|text\/xml|application\/xml)\b/;

/** Whether an uploaded file is markup a browser runs script in when served from the site. */
function isMarkup(part: Part): boolean {
  return MARKUP_TYPE.test(part.contentType) ||
    part.filenames.some((f) => MARKUP_NAME.test(f.replace(SERVED_AS, "")));
}

/** A part content type with nothing but a media type and harmless parameters. */
const PLAIN_TYPE = /^[\w.+-]+\/[\w.+-]+(?:\s*;\s*[\w-]+=[\w.-]+)*$/i;

function latin1(bytes: Uint8Array): string {
  let out = "";
  const CHUNK = 8192;
  for (let i = 0; i < bytes.length; i += CHUNK) {
    out += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return out;
}

function bytesOfLatin1(s: string): Uint8Array {
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}

/**
 * Binary content (images, archives) is not inspectable text; a few control bytes are.
 *
 * @param s the content, one character a byte
 * @param field true for a form field, where NUL bytes do not count as binary
 */
export function isText(s: string, field = false): boolean {
  const n = Math.min(s.length, 512);
  let control = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if ((c < 0x20 && c !== 9 && c !== 10 && c !== 13 && (c !== 0 || !field)) || c === 0xfffd) {
      control++;
    }
  }
  return control * 20 <= n;
}
