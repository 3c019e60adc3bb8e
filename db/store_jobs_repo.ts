/**
 * SQL the store-maintenance thread (`mod/ops/store_jobs_worker.ts`) runs on its own connection:
 * the optimisation (with a `VACUUM` only when enough of the file is free), the rows and oldest
 * row of the tables an operator watches, and the access-log rows older than a time.
 */
import type { Db } from "./store.ts";

/** What an optimisation did. */
export interface OptimizeOutcome {
  readonly vacuumed: boolean;
  readonly free_pages_before: number;
  readonly pages_before: number;
  readonly pages_after: number;
  readonly bytes_reclaimed: number;
}

/** Rows and the oldest record of one table (`oldest` in ms since the epoch). */
export interface TableRows {
  readonly table: string;
  readonly rows: number;
  readonly oldest: number | null;
}

function pragma(db: Db, name: "page_count" | "freelist_count" | "page_size"): number {
  return Number((db.prepare(`PRAGMA ${name}`).get() as Record<string, number>)[name]);
}

/**
 * `PRAGMA optimize`, a `VACUUM` when at least `vacuumFreeRatio` of the pages are free (it
 * rewrites the file and holds the write lock meanwhile), then a truncating WAL checkpoint.
 */
export function optimizeStore(db: Db, vacuumFreeRatio: number): OptimizeOutcome {
  db.exec("PRAGMA optimize");
  const pages = pragma(db, "page_count");
  const free = pragma(db, "freelist_count");
  const vacuumed = pages > 0 && free / pages >= vacuumFreeRatio;
  if (vacuumed) db.exec("VACUUM");
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const after = pragma(db, "page_count");
  const pageSize = pragma(db, "page_size");
  return {
    vacuumed,
    free_pages_before: free,
    pages_before: pages,
    pages_after: after,
    bytes_reclaimed: (pages - after) * pageSize,
  };
}

/** The tables whose growth an operator watches, with the column that dates a row. */
const WATCHED_TABLES: readonly (readonly [string, string])[] = [
  ["access_logs", "time"],
  ["audit_log", "time"],
  ["notifications", "time"],
  ["notification_deliveries", "created_at"],
  ["monitor_rollups", "bucket"],
  ["ops_task_runs", "started_at"],
  ["admin_sessions", "created_at"],
  ["api_tokens", "created_at"],
  ["sites", "created_at"],
  ["policy_objects", "created_at"],
];

/** Rows and the oldest row of each watched table this store has. */
export function tableRows(db: Db): TableRows[] {
  const out: TableRows[] = [];
  for (const [table, column] of WATCHED_TABLES) {
    try {
      const r = db.prepare(
        `SELECT COUNT(*) AS n, MIN(${column}) AS oldest FROM ${table}`,
      ).get() as { n: number; oldest: number | null };
      out.push({ table, rows: Number(r.n), oldest: r.oldest === null ? null : Number(r.oldest) });
    } catch {
      // A table (or its column) this store does not have.
    }
  }
  return out;
}

/** Access-log rows older than `before` (what the storage clean-up would delete). */
export function accessLogRowsBefore(db: Db, before: number): number {
  const r = db.prepare("SELECT COUNT(*) AS n FROM access_logs WHERE time < ?").get(before) as {
    n: number;
  };
  return Number(r.n);
}
