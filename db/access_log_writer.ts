/**
 * Where access-log batches are written: directly on this thread (tests, tools) or by a
 * writer thread with its own store connection (the running server), so the insert work and
 * its pauses stay off the data plane's event loop.
 */
import type { AccessLogRepo, StoredAccessLogRow } from "./access_log_repo.ts";

/** How a batch of rows is written. */
export interface WriteOptions {
  /** Rows in the batch (the writer thread counts the deferred rows with it). */
  readonly count: number;
  /** May wait a little to be written with the next batches (fewer commits). */
  readonly defer?: boolean;
  /**
   * Keep the newest `keep` rows: the same transaction deletes the oldest beyond them, at most
   * twice the rows written (`max_records` in step with the inserts).
   */
  readonly keep?: number;
}

export interface AccessLogWriter {
  /**
   * Writes rows given as text (`db/access_log_lines.ts`); resolves with the number of rows
   * written, rejects when the batch failed. A batch that is not deferred writes every batch
   * before it too ("" writes only those).
   */
  writeLines(lines: string, options: WriteOptions): Promise<number>;
  /**
   * One slice of retention (rows older than `before`, then all but the newest `keep`); resolves
   * with the rows deleted, 0 when done. Batches written meanwhile go in between slices.
   */
  prune(before: number, keep: number): Promise<number>;
  /** Rows the writes' `keep` deleted so far. */
  trimmed(): number;
  close(): Promise<void>;
}

/** What a sink ships from: the stored rows and its persisted cursor. */
export interface ShipSource {
  /**
   * Rows after row id `afterId` (oldest first, at most `limit`) and the newest id stored: what a
   * sink ships from. Read where the inserts run, after every batch posted before it.
   */
  readAfter(afterId: number, limit: number): Promise<{ rows: StoredAccessLogRow[]; maxId: number }>;
  /**
   * A sink's starting point: its persisted cursor (the last row id it shipped), or, for a sink
   * never started, the newest id stored when the request is handled, saved as its cursor. The
   * request takes its place among the writes: a sink asks when it is created, so every row
   * written after that is after its cursor (a second request for the newest id, sent once the
   * first answered, let the rows written in between pass unshipped).
   */
  startCursor(name: string, now: number): Promise<number>;
  saveCursor(name: string, lastId: number, now: number): Promise<void>;
}

/** Writes on the calling thread. */
export function directWriter(repo: AccessLogRepo): AccessLogWriter & ShipSource {
  let trimmed = 0;
  return {
    writeLines: (lines, options) =>
      attempt(() => {
        const n = lines === "" ? 0 : repo.insertLines(lines);
        if (options.keep !== undefined && n > 0) trimmed += repo.trim(options.keep, 2 * n);
        return n;
      }),
    prune: (before, keep) => attempt(() => repo.pruneSlice(before, keep)),
    trimmed: () => trimmed,
    readAfter: (afterId, limit) => attempt(() => repo.readAfter(afterId, limit)),
    startCursor: (name, now) => attempt(() => repo.startCursor(name, now)),
    saveCursor: (name, lastId, now) => attempt(() => repo.saveCursor(name, lastId, now)),
    close: () => Promise.resolve(),
  };
}

function attempt<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

type Reply =
  /** `pruned`: rows a write's `keep` deleted. */
  | { kind: "written"; id: number; written: unknown; pruned?: number }
  /** Deferred batches written together: a row count, or the error, per batch. */
  | { kind: "batches"; ids: number[]; results: Array<number | string>; pruned: number }
  | { kind: "failed"; id: number; error: string }
  | { kind: "closed" };

/** Writes on a worker thread that opens its own connection to the store at `path`. */
export function createWorkerWriter(path: string): AccessLogWriter & ShipSource {
  const worker = new Worker(new URL("./access_log_worker.ts", import.meta.url), {
    type: "module",
  });
  let next = 0;
  const pending = new Map<number, { resolve: (v: never) => void; reject: (e: Error) => void }>();
  let onClosed: (() => void) | undefined;
  let trimmed = 0;
  worker.onmessage = (e: MessageEvent<Reply>) => {
    const m = e.data;
    if (m.kind === "closed") return onClosed?.();
    if (m.kind !== "failed") trimmed += m.pruned ?? 0;
    if (m.kind === "batches") {
      m.ids.forEach((id, i) => {
        const p = pending.get(id);
        pending.delete(id);
        const r = m.results[i];
        if (typeof r === "number") p?.resolve(r as never);
        else p?.reject(new Error(`Access-log batch failed: ${r}`));
      });
      return;
    }
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (m.kind === "written") p?.resolve(m.written as never);
    else p?.reject(new Error(`Access-log batch failed: ${m.error}`));
  };
  worker.postMessage({ kind: "open", path });
  let closing: Promise<void> | undefined;
  const request = <T = number>(message: Record<string, unknown>): Promise<T> => {
    if (closing) return Promise.reject(new Error("The access-log writer is closed"));
    const id = ++next;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: never) => void, reject });
      worker.postMessage({ ...message, id });
    });
  };
  return {
    // Parsed on the writer thread: the thread that posts copies one string.
    writeLines: (lines, o) =>
      request({ kind: "write", lines, count: o.count, defer: o.defer, keep: o.keep }),
    prune: (before, keep) => request({ kind: "prune", before, keep }),
    trimmed: () => trimmed,
    readAfter: (afterId, limit) => request({ kind: "read", afterId, limit }),
    startCursor: (name, now) => request({ kind: "start-cursor", name, now }),
    saveCursor: (name, lastId, now) => request({ kind: "save-cursor", name, lastId, now }),
    close() {
      closing ??= new Promise<void>((resolve) => {
        // Messages are handled in order, so every posted batch is written before "close".
        onClosed = () => {
          worker.terminate();
          resolve();
        };
        worker.postMessage({ kind: "close" });
      });
      return closing;
    },
  };
}
