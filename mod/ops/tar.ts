/**
 * A minimal, bounded ustar reader and writer for content packages. The reader reports every
 * entry's real type (links, devices and FIFOs included) so the caller can refuse them, and
 * refuses what it cannot judge safely: GNU/pax extension headers, base-256 sizes, bad checksums
 * and truncated data.
 */
const BLOCK = 512;
const decoder = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

export type TarEntryType =
  | "file"
  | "dir"
  | "hardlink"
  | "symlink"
  | "char-device"
  | "block-device"
  | "fifo"
  | "extension";

export interface TarEntry {
  readonly name: string;
  readonly type: TarEntryType;
  readonly size: number;
  /** The content of a regular file (a view into the archive). */
  readonly data: Uint8Array;
}

export class TarError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TarError";
  }
}

const TYPES: Readonly<Record<string, TarEntryType>> = {
  "0": "file",
  "\0": "file",
  "7": "file",
  "5": "dir",
  "1": "hardlink",
  "2": "symlink",
  "3": "char-device",
  "4": "block-device",
  "6": "fifo",
};

function field(header: Uint8Array, start: number, length: number): Uint8Array {
  const raw = header.subarray(start, start + length);
  const nul = raw.indexOf(0);
  return nul < 0 ? raw : raw.subarray(0, nul);
}

function text(header: Uint8Array, start: number, length: number): string {
  try {
    return decoder.decode(field(header, start, length));
  } catch {
    throw new TarError("an entry name is not valid UTF-8");
  }
}

function octal(header: Uint8Array, start: number, length: number, what: string): number {
  if ((header[start]! & 0x80) !== 0) throw new TarError(`base-256 ${what} is not supported`);
  const value = text(header, start, length).trim();
  if (!/^[0-7]*$/.test(value)) throw new TarError(`the ${what} field is not octal`);
  return value === "" ? 0 : parseInt(value, 8);
}

function checksumOf(header: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : header[i]!;
  return sum;
}

/** Parses a ustar archive; at most `maxEntries` entries before it gives up. */
export function readTar(archive: Uint8Array, maxEntries: number): TarEntry[] {
  const entries: TarEntry[] = [];
  let offset = 0;
  while (offset + BLOCK <= archive.length) {
    const header = archive.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) return entries;
    if (entries.length >= maxEntries) {
      throw new TarError(`more than ${maxEntries} entries`);
    }
    if (octal(header, 148, 8, "checksum") !== checksumOf(header)) {
      throw new TarError(`bad header checksum at offset ${offset}`);
    }
    const magic = text(header, 257, 6);
    if (magic !== "ustar" && magic !== "ustar ") throw new TarError("not a ustar archive");
    const prefix = text(header, 345, 155);
    const base = text(header, 0, 100);
    const name = prefix ? `${prefix}/${base}` : base;
    const flag = String.fromCharCode(header[156]!);
    const type = TYPES[flag] ?? "extension";
    const size = octal(header, 124, 12, "size");
    const start = offset + BLOCK;
    const hasData = type === "file" || type === "extension";
    const length = hasData ? size : 0;
    if (start + length > archive.length) throw new TarError(`entry "${name}" is truncated`);
    entries.push({ name, type, size: length, data: archive.subarray(start, start + length) });
    offset = start + Math.ceil(length / BLOCK) * BLOCK;
  }
  throw new TarError("the archive has no end-of-archive marker");
}

export interface TarInput {
  readonly name: string;
  /** Omitted for a directory. */
  readonly data?: Uint8Array;
  /** Seconds since the epoch. */
  readonly mtime: number;
}

function put(header: Uint8Array, start: number, length: number, value: string): void {
  const bytes = encoder.encode(value);
  if (bytes.length > length) throw new TarError(`"${value}" does not fit a ${length}-byte field`);
  header.set(bytes, start);
}

function putOctal(header: Uint8Array, start: number, length: number, value: number): void {
  put(header, start, length, value.toString(8).padStart(length - 1, "0") + "\0");
}

function splitName(name: string): { prefix: string; base: string } {
  if (encoder.encode(name).length <= 100) return { prefix: "", base: name };
  for (let i = name.indexOf("/"); i > 0; i = name.indexOf("/", i + 1)) {
    const prefix = name.slice(0, i);
    const base = name.slice(i + 1);
    if (encoder.encode(prefix).length <= 155 && encoder.encode(base).length <= 100) {
      return { prefix, base };
    }
  }
  throw new TarError(`the path "${name}" is too long for ustar`);
}

/** Writes a ustar archive of regular files and directories. */
export function writeTar(inputs: readonly TarInput[]): Uint8Array {
  const parts: Uint8Array[] = [];
  let total = 0;
  for (const input of inputs) {
    const isDir = input.data === undefined;
    const header = new Uint8Array(BLOCK);
    const { prefix, base } = splitName(
      isDir && !input.name.endsWith("/") ? input.name + "/" : input.name,
    );
    put(header, 0, 100, base);
    putOctal(header, 100, 8, isDir ? 0o755 : 0o644);
    putOctal(header, 108, 8, 0);
    putOctal(header, 116, 8, 0);
    putOctal(header, 124, 12, input.data?.length ?? 0);
    putOctal(header, 136, 12, Math.max(0, Math.floor(input.mtime)));
    header[156] = (isDir ? "5" : "0").charCodeAt(0);
    put(header, 257, 6, "ustar\0");
    put(header, 263, 2, "00");
    put(header, 345, 155, prefix);
    putOctal(header, 148, 8, checksumOf(header));
    parts.push(header);
    total += BLOCK;
    if (input.data) {
      const padded = new Uint8Array(Math.ceil(input.data.length / BLOCK) * BLOCK);
      padded.set(input.data);
      parts.push(padded);
      total += padded.length;
    }
  }
  const out = new Uint8Array(total + 2 * BLOCK);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
