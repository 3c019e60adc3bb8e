/**
 * Where access-log batches are written: directly on this thread (tests, tools: {@link
 * directWriter}) or by a writer thread with its own store connection (the running server:
 * `createWorkerWriter` in `worker_writer.ts`), so the insert work and its pauses stay off the
 * data plane's event loop.
 */
import type { AccessLogRepo } from "../../db/access_log_repo.ts";
import type { ShipStart } from "../../db/access_log_cursors.ts";
import type { StoredAccessLogRow } from "../../db/access_log_rows.ts";

/** How a batch of rows is written. */
export interface WriteOptions {
  /** Rows in the batch (the writer thread counts the deferred rows with it). */
  readonly count: number;
  /** May wait a little to be written with the next batches (fewer commits). */
  readonly defer?: boolean;
  /**
   * The queue is behind: a deferred batch may wait for more rows (1,024 rather than 64) to be
   * committed with them, which costs less a row.
   */
  readonly bulk?: boolean;
  /**
   * Keep the newest `keep` rows: the same transaction deletes the oldest beyond them, at most
   * twice the rows written (`max_records` in step with the inserts).
   */
  readonly keep?: number;
}

export interface AccessLogWriter {
  /**
   * Writes rows given as text (`lines.ts`); resolves with the number of rows
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
  /** Times the writer thread was replaced by one at normal priority (`createWorkerWriter`). */
  escalations?(): number;
  /** Times a normal-priority writer thread was replaced by a low-priority one again. */
  deescalations?(): number;
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
   * first answered, let the rows written in between pass unshipped). A sink asking again after
   * the store failed passes `since` (when it first asked, less a margin): it then starts before
   * the first row of a request that ended since, not at the newest. A save the store refuses
   * still answers the start (`saved: false`, see `startCursor` in `db/access_log_cursors.ts`).
   */
  startCursor(name: string, now: number, since?: number): Promise<ShipStart>;
  saveCursor(name: string, lastId: number, now: number): Promise<void>;
}

/**
 * Writes on the calling thread.
 *
 * @example
 * ```ts
 * const writer = directWriter(createAccessLogRepo(db, lineFormat));
 * await writer.writeLines(recordLines(record), { count: 1 });
 * ```
 */
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
    startCursor: (name, now, since) => attempt(() => repo.startCursor(name, now, since)),
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
