/**
 * The access log's spill file: rows the write queue must not lose but cannot hold (verdicts past
 * the in-memory ceiling while the writer is behind, a batch the writer refused) are appended to
 * one file beside the store, in the rows' own text (`lines.ts`), and read back in chunks once
 * the writer has caught up. Appends and reads are asynchronous (Deno's file operations run off
 * the event loop), so the request path only hands over a string. The file is emptied once all
 * of it is read back and stored; a file left by a process that ended first is read back after
 * the next start.
 *
 * @example
 * ```ts
 * const spill = new SpillFile(`${dataDir}/access_log.spill`, { maxBytes: 256 << 20, onLost });
 * await spill.open();
 * spill.add(lines, count); // false: full, the caller counts the rows as lost
 * const chunk = await spill.read(); // {lines, count, bytes} from the oldest, or undefined
 * await spill.consumed(chunk);
 * ```
 */

export interface SpillOptions {
  /** The most bytes the file holds; rows beyond are refused (`add` answers false). */
  readonly maxBytes: number;
  /** The most bytes a {@link SpillFile.read} hands back (default 256 KiB; a longer row whole). */
  readonly chunkBytes?: number;
  /** Told about rows an append failed to write (a full disk): the caller counts them as lost. */
  readonly onLost: (lines: string, count: number, error: Error) => void;
}

/** A chunk read back: whole rows, oldest first. */
export interface SpillChunk {
  readonly lines: string;
  readonly count: number;
  readonly bytes: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const NEWLINE = 10;

export class SpillFile {
  readonly #path: string;
  readonly #o: SpillOptions;
  #file: Deno.FsFile | undefined;
  /** Bytes appended and confirmed; bytes read back and stored; bytes in appends not done yet. */
  #end = 0;
  #readAt = 0;
  #pendingBytes = 0;
  /** Rows in the file not yet stored (appends in flight among them). */
  #rows = 0;
  #spilled = 0;
  /** Appends and the emptying run one after another, in order. */
  #chain: Promise<void> = Promise.resolve();

  constructor(path: string, options: SpillOptions) {
    this.#path = path;
    this.#o = options;
  }

  /** Rows waiting in the file to be stored. */
  get rows(): number {
    return this.#rows;
  }

  /** Bytes waiting in the file (appends in flight among them). */
  get bytes(): number {
    return this.#end + this.#pendingBytes - this.#readAt;
  }

  /** Rows ever appended (a left-over file's rows among them). */
  get spilled(): number {
    return this.#spilled;
  }

  /**
   * Opens the file for appending, taking whatever a previous process left in it: its whole rows
   * are read back like new ones, a cut-off last row (the process ended mid-append) is cut off.
   * Returns the rows found.
   */
  async open(): Promise<number> {
    this.#file = await Deno.open(this.#path, { read: true, append: true, create: true });
    const size = (await this.#file.stat()).size;
    if (size === 0) return 0;
    const { rows, end } = await this.#scan(size);
    if (end < size) await this.#file.truncate(end);
    this.#end = end;
    this.#rows += rows;
    this.#spilled += rows;
    return rows;
  }

  /**
   * Appends `count` rows (`lines`, whole rows of `lines.ts`) after the ones before; false (and
   * nothing written) when the file is full or not open. An append that fails later is reported
   * to `onLost`.
   */
  add(lines: string, count: number): boolean {
    if (this.#file === undefined || count === 0) return count === 0;
    const bytes = encoder.encode(lines);
    if (this.bytes + bytes.length > this.#o.maxBytes) return false;
    this.#pendingBytes += bytes.length;
    this.#rows += count;
    this.#spilled += count;
    const file = this.#file;
    this.#chain = this.#chain.then(async () => {
      try {
        for (let at = 0; at < bytes.length;) at += await file.write(bytes.subarray(at));
        this.#end += bytes.length;
      } catch (err) {
        // What a failed append wrote in part is cut off, so the file stays whole rows.
        await file.truncate(this.#end).catch(() => {});
        this.#rows -= count;
        this.#o.onLost(lines, count, err as Error);
      } finally {
        this.#pendingBytes -= bytes.length;
      }
    });
    return true;
  }

  /** The oldest whole rows appended and not yet consumed, or undefined when there are none. */
  async read(): Promise<SpillChunk | undefined> {
    await this.#chain;
    let want = this.#o.chunkBytes ?? 256 * 1024;
    for (;;) {
      const available = this.#end - this.#readAt;
      if (available <= 0) return undefined;
      const buf = await this.#readRange(this.#readAt, Math.min(want, available));
      const { rows, end } = rowsIn(buf);
      if (rows > 0) {
        return { lines: decoder.decode(buf.subarray(0, end)), count: rows, bytes: end };
      }
      // One row longer than the chunk: read more of it.
      if (want >= available) return undefined;
      want *= 2;
    }
  }

  /** A chunk from {@link read} is stored (or counted as lost): the next read starts after it. */
  consumed(chunk: SpillChunk): Promise<void> {
    this.#readAt += chunk.bytes;
    this.#rows -= chunk.count;
    // Once everything appended is consumed, the file is emptied (in the appends' order, so an
    // append posted meanwhile lands after the emptying).
    this.#chain = this.#chain.then(async () => {
      if (this.#readAt !== this.#end || this.#file === undefined) return;
      await this.#file.truncate(0).catch(() => {});
      this.#readAt = this.#end = 0;
    });
    return this.#chain;
  }

  /** Waits for the appends in flight and closes the file (what it holds is read after a start). */
  async close(): Promise<void> {
    await this.#chain;
    this.#file?.close();
    this.#file = undefined;
  }

  async #readRange(at: number, length: number): Promise<Uint8Array> {
    using f = await Deno.open(this.#path, { read: true });
    await f.seek(at, Deno.SeekMode.Start);
    const buf = new Uint8Array(length);
    let got = 0;
    while (got < length) {
      const n = await f.read(buf.subarray(got));
      if (n === null) break;
      got += n;
    }
    return buf.subarray(0, got);
  }

  /** The whole rows of the file's first `size` bytes, in slices of a MiB. */
  async #scan(size: number): Promise<{ rows: number; end: number }> {
    let rows = 0;
    let newlines = 0;
    let end = 0;
    const slice = 1 << 20;
    for (let at = 0; at < size; at += slice) {
      const buf = await this.#readRange(at, Math.min(slice, size - at));
      for (let i = 0; i < buf.length; i++) {
        if (buf[i] !== NEWLINE) continue;
        if (++newlines % 2 === 0) {
          rows++;
          end = at + i + 1;
        }
      }
    }
    return { rows, end };
  }
}

/** Whole rows (two lines each) at the start of `buf`, and the byte after the last. */
function rowsIn(buf: Uint8Array): { rows: number; end: number } {
  let newlines = 0;
  let end = 0;
  for (let i = buf.indexOf(NEWLINE); i >= 0; i = buf.indexOf(NEWLINE, i + 1)) {
    if (++newlines % 2 === 0) end = i + 1;
  }
  return { rows: newlines >> 1, end };
}
