/**
 * SQL for access logs: batched inserts and retention, and the repository that joins them with
 * the queries (`access_log_queries.ts`) and the shipping cursors (`access_log_cursors.ts`). The
 * rows' text is the access log's (`mod/access_log/lines.ts`), passed down as an
 * `AccessLogFormat` (`access_log_rows.ts`): nothing in db/ knows how a batch is framed or how a
 * record is compacted.
 */
import type { SQLInputValue } from "node:sqlite";
import { DatabaseSync } from "node:sqlite";
import type { SqliteDb as Db } from "./store.ts";
import { transaction } from "./store.ts";
import { createAccessLogQueryRepo } from "./access_log_queries.ts";
import { createShipCursorRepo } from "./access_log_cursors.ts";
import { type AccessLogFormat, type AccessLogRow, indexedColumns } from "./access_log_rows.ts";

/** Rows per multi-row insert statement, and the columns of a row. */
const INSERT_ROWS = 16;
const COLUMNS = 11;

/** Rows deleted per retention transaction. */
const PRUNE_CHUNK = 5000;

/**
 * The writer thread's own connection to the store at `path` (migrated by the main thread
 * already): the same journal, synchronous mode and busy timeout as the main connection.
 */
export function openWriterStore(path: string): Db {
  const db = new DatabaseSync(path, { timeout: 5000 });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  return db;
}

/** Inserts and retention: what the writer thread runs. */
function createAccessLogWrites(db: Db, format: AccessLogFormat) {
  // OR IGNORE: a trace id is unique; a duplicate (impossible with random ids) must not fail the
  // whole batch.
  const insertRows = (rows: number) =>
    db.prepare(
      `INSERT OR IGNORE INTO access_logs
       (trace_id, time, site_id, client_ip, method, host, path, status, action, attack_class, record)
     VALUES ${Array(rows).fill("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
    );
  const insert = insertRows(1);
  // Rows go in 16 a statement: one step and one sequence update for 16 rows make each row cheaper
  // (docs/bench/2026-11-25-access-log-one-worker.md); OR IGNORE still applies row by row.
  const insertMany = insertRows(INSERT_ROWS);
  // Retention deletes in chunks, each its own short transaction, so a large backlog never
  // holds the store's write lock long enough to make other writers wait on the busy timeout.
  const pruneAge = db.prepare(
    `DELETE FROM access_logs WHERE id IN
       (SELECT id FROM access_logs WHERE time < ? ORDER BY time LIMIT ${PRUNE_CHUNK})`,
  );
  // Ids only grow (AUTOINCREMENT) and rows are deleted oldest first, so all but the newest
  // `keep` rows are those with an id up to MAX(id) - keep: two B-tree descents, where counting
  // `keep` rows back from the newest (LIMIT 1 OFFSET keep) walked the whole index per slice.
  // Rows missing below that line (a request that finished long after it arrived, deleted by
  // age) only make the table hold a few fewer than `keep`.
  const idRange = db.prepare(
    "SELECT (SELECT MIN(id) FROM access_logs) AS lo, (SELECT MAX(id) FROM access_logs) AS hi",
  );
  const pruneUpTo = db.prepare("DELETE FROM access_logs WHERE id <= ?");
  const count = db.prepare("SELECT COUNT(*) AS n FROM access_logs");

  /**
   * Deletes the oldest rows beyond the newest `keep`, at most `most` ids' worth (the writer
   * thread calls it with each write, so the table stays at `keep`); returns rows deleted.
   */
  function trim(keep: number, most: number): number {
    const { lo, hi } = idRange.get() as { lo: number | null; hi: number | null };
    if (lo === null || hi === null || hi - keep < lo) return 0;
    const upTo = Math.min(hi - keep, lo + most - 1);
    return Number(transaction(db, () => pruneUpTo.run(upTo)).changes);
  }

  /**
   * One slice of retention (at most two chunks of 5,000 rows, each its own transaction):
   * rows older than `before` first, then all but the newest `keep`. Returns the rows deleted;
   * 0 when nothing is left to delete. Callers loop, letting other writes in between slices.
   */
  function pruneSlice(before: number, keep: number): number {
    const aged = Number(transaction(db, () => pruneAge.run(before)).changes);
    if (aged >= PRUNE_CHUNK) return aged;
    return aged + trim(keep, PRUNE_CHUNK);
  }

  return {
    /**
     * Inserts rows given as text (`format.eachRow`) in one transaction, straight from each
     * row's parsed columns; returns how many were written.
     */
    insertLines(text: string): number {
      return transaction(db, () => {
        let n = 0;
        const args: SQLInputValue[] = [];
        format.eachRow(text, (c, record) => {
          args.push(...c, record);
          if (args.length === INSERT_ROWS * COLUMNS) {
            n += Number(insertMany.run(...args).changes);
            args.length = 0;
          }
        });
        for (let i = 0; i < args.length; i += COLUMNS) {
          n += Number(insert.run(...args.slice(i, i + COLUMNS)).changes);
        }
        return n;
      });
    },
    trim,
    /** Inserts rows in one transaction; returns how many were written. */
    insertBatch(rows: readonly AccessLogRow[]): number {
      return transaction(db, () => {
        let n = 0;
        for (const r of rows) {
          n += Number(insert.run(...indexedColumns(r), r.record).changes);
        }
        return n;
      });
    },
    pruneSlice,
    /** Deletes rows older than `before` and all but the newest `keep`; returns rows deleted. */
    prune(before: number, keep: number): number {
      let deleted = 0;
      for (let n = -1; n !== 0;) deleted += n = pruneSlice(before, keep);
      return deleted;
    },
    count(): number {
      return (count.get() as { n: number }).n;
    },
  };
}

/**
 * The access-log table: inserts and retention, queries, and the shipping cursors, on `db`;
 * records read back are made whole by `format`.
 */
export function createAccessLogRepo(db: Db, format: AccessLogFormat) {
  return {
    ...createAccessLogWrites(db, format),
    ...createAccessLogQueryRepo(db, format),
    ...createShipCursorRepo(db, format),
  };
}

export type AccessLogRepo = ReturnType<typeof createAccessLogRepo>;
