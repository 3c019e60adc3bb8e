/**
 * A lenient, linear JSON reader for inspection: it reports every string (keys and values)
 * with its path, decoding escapes exactly as `JSON.parse` would, and it keeps going where a
 * parser gives up - a body cut at the inspection limit, a trailing comma, junk between
 * values - so a truncated or slightly broken document still shows its strings.
 */

/**
 * Receives one string and the offset of its opening quote in the text; returns false to stop
 * the scan.
 */
export type JsonSink = (path: string, value: string, key: boolean, at: number) => boolean;

/** Nesting levels that extend a path; deeper strings keep the deepest path. */
const MAX_DEPTH = 32;

interface Frame {
  readonly array: boolean;
  readonly path: string;
  key: string;
  index: number;
  /** In an object: true after `:` until the value ends. */
  value: boolean;
}

/**
 * Scans a JSON text.
 *
 * @param text the document (possibly truncated or malformed)
 * @param sink called for every string, in document order
 * @returns true when the text read as JSON, false when it held text no JSON has
 */
export function scanJson(text: string, sink: JsonSink): boolean {
  const stack: Frame[] = [];
  let overflow = 0;
  let clean = true;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 10 || c === 13 || c === 9) {
      i++;
      continue;
    }
    const top = stack[stack.length - 1];
    if (c === 123 /* { */ || c === 91 /* [ */) {
      if (stack.length < MAX_DEPTH) {
        const path = top === undefined ? "" : childPath(top);
        stack.push({ array: c === 91, path, key: "", index: 0, value: false });
      } else {
        // Deeper levels are counted, not kept (nor named: a path per bracket of a run of
        // `[[[[` would cost as much as the run is long, at every bracket).
        clean = false;
        overflow++;
      }
      i++;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      if (overflow > 0) {
        overflow--;
        i++;
        continue;
      }
      stack.pop();
      const parent = stack[stack.length - 1];
      if (parent !== undefined && !parent.array) parent.value = false;
      i++;
    } else if (c === 44 /* , */) {
      if (top !== undefined) {
        if (top.array) top.index++;
        else top.value = false;
      }
      i++;
    } else if (c === 58 /* : */) {
      if (top !== undefined && !top.array) top.value = true;
      else clean = false;
      i++;
    } else if (c === 34 /* " */) {
      const at = i;
      const end = stringEnd(text, i + 1);
      const s = unescape(text, i + 1, end);
      i = end + 1;
      if (top === undefined) {
        if (!sink("", s, false, at)) return clean;
      } else if (!top.array && !top.value) {
        top.key = s;
        if (!sink(childPath(top), s, true, at)) return clean;
      } else if (!sink(childPath(top), s, false, at)) return clean;
    } else {
      // Numbers, literals; anything else is not JSON.
      const start = i;
      while (i < n && !isStructural(text.charCodeAt(i))) i++;
      if (!LITERAL.test(text.slice(start, i).trim())) clean = false;
      if (i === start) i++;
    }
  }
  return clean;
}

const LITERAL = /^(?:-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)$/;

function isStructural(c: number): boolean {
  return c === 44 || c === 58 || c === 123 || c === 125 || c === 91 || c === 93 || c === 34;
}

function childPath(frame: Frame): string {
  if (frame.array) return `${frame.path}[${frame.index}]`;
  return frame.path.length === 0 ? frame.key : `${frame.path}.${frame.key}`;
}

/** Index of the closing quote of a string starting at `from`, or the text's length. */
function stringEnd(text: string, from: number): number {
  let i = from;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 92 /* \ */) i += 2;
    else if (c === 34) return i;
    else i++;
  }
  return text.length;
}

const HEX4 = /^[0-9a-fA-F]{4}$/;
const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

function unescape(text: string, from: number, to: number): string {
  const raw = text.slice(from, to);
  let i = raw.indexOf("\\");
  if (i < 0) return raw;
  // The runs between escapes are copied whole: a long string (a document posted as one JSON
  // value) is not rebuilt a character at a time.
  let out = "";
  let start = 0;
  // A backslash that ends the text stays as it is.
  while (i >= 0 && i + 1 < raw.length) {
    out += raw.slice(start, i);
    const kind = raw[i + 1]!;
    if (kind === "u" && HEX4.test(raw.slice(i + 2, i + 6))) {
      out += String.fromCharCode(Number.parseInt(raw.slice(i + 2, i + 6), 16));
      start = i + 6;
    } else {
      out += SIMPLE_ESCAPES[kind] ?? kind;
      start = i + 2;
    }
    i = raw.indexOf("\\", start);
  }
  return out + raw.slice(start);
}
