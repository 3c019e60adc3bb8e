/**
 * Threat-intelligence feed parsers: a plain list of addresses and networks, a CSV file with a
 * chosen column, or a JSON list (of strings, or of objects with a chosen field). Each yields
 * networks ready for an IP set. Feeds are bounded: a body over `maxBytes` or with more than
 * `maxEntries` indicators is refused as a whole, so a runaway feed cannot take the process's
 * memory (the caller keeps the feed's previous indicators).
 */
import { type Cidr, parseCidr } from "./ip_address.ts";

export type FeedFormat =
  | { readonly kind: "plain" }
  /** `column` is a 0-based index, or a header name (the first row is then a header). */
  | { readonly kind: "csv"; readonly column: number | string; readonly delimiter?: string }
  /** Without `field` the document is a list of strings; with it, a list of objects. */
  | { readonly kind: "json"; readonly field?: string };

export interface FeedLimits {
  readonly maxEntries: number;
  readonly maxBytes: number;
}

export type FeedParse =
  | {
    readonly ok: true;
    readonly networks: readonly Cidr[];
    /** Values that were not an address or network (skipped). */
    readonly invalid: number;
  }
  | { readonly ok: false; readonly error: string };

const COMMENT = /^\s*(?:#|;|\/\/)/;

function splitCsvLine(line: string, delimiter: string): string[] {
  const out: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"' && field === "") quoted = true;
    else if (ch === delimiter) {
      out.push(field);
      field = "";
    } else field += ch;
  }
  out.push(field);
  return out.map((f) => f.trim());
}

function plainValues(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "" || COMMENT.test(line)) continue;
    out.push(line.trim().split(/[\s;,#]/, 1)[0]!);
  }
  return out;
}

function csvValues(text: string, column: number | string, delimiter: string): string[] | string {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "" && !COMMENT.test(l));
  let index = typeof column === "number" ? column : -1;
  let start = 0;
  if (typeof column === "string") {
    const header = splitCsvLine(lines[0] ?? "", delimiter).map((h) => h.toLowerCase());
    index = header.indexOf(column.toLowerCase());
    if (index < 0) return `CSV header has no column "${column}"`;
    start = 1;
  }
  const out: string[] = [];
  for (let i = start; i < lines.length; i++) {
    out.push(splitCsvLine(lines[i]!, delimiter)[index] ?? "");
  }
  return out;
}

function jsonValues(text: string, field: string | undefined): string[] | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return `Feed is not valid JSON: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (!Array.isArray(doc)) return "JSON feed must be a list";
  return doc.map((item: unknown) => {
    const v = field === undefined ? item : (item as Record<string, unknown> | null)?.[field];
    return typeof v === "string" ? v : "";
  });
}

/** Parses a feed body into networks. */
export function parseFeed(text: string, format: FeedFormat, limits: FeedLimits): FeedParse {
  if (text.length > limits.maxBytes) {
    return { ok: false, error: `Feed is larger than the limit of ${limits.maxBytes} bytes` };
  }
  const values = format.kind === "plain"
    ? plainValues(text)
    : format.kind === "csv"
    ? csvValues(text, format.column, format.delimiter ?? ",")
    : jsonValues(text, format.field);
  if (typeof values === "string") return { ok: false, error: values };
  const networks: Cidr[] = [];
  let invalid = 0;
  for (const v of values) {
    const cidr = parseCidr(v);
    if (!cidr) {
      invalid++;
      continue;
    }
    if (networks.length >= limits.maxEntries) {
      return { ok: false, error: `Feed has more than the limit of ${limits.maxEntries} entries` };
    }
    networks.push(cidr);
  }
  return { ok: true, networks, invalid };
}
