/**
 * The store-maintenance thread: runs one heavy job (integrity check, backup, optimisation) on
 * its own connection to the store, so none of it stalls the data plane's event loop. Started per
 * job by `runStoreJob` in `store_jobs.ts`; answers one `{ ok, result }` or `{ ok: false, error }`.
 */
/// <reference lib="deno.worker" />
import { openExisting } from "../../db/maintenance.ts";
import { backupStore, checkDb } from "./backup.ts";
import { systemRandom } from "../core/random.ts";
import type { StoreJob } from "./store_jobs.ts";

function optimize(path: string, vacuumFreeRatio: number) {
  const db = openExisting(path, { readOnly: false });
  try {
    db.exec("PRAGMA optimize");
    const pages = Number(
      (db.prepare("PRAGMA page_count").get() as { page_count: number }).page_count,
    );
    const free = Number(
      (db.prepare("PRAGMA freelist_count").get() as { freelist_count: number }).freelist_count,
    );
    const vacuumed = pages > 0 && free / pages >= vacuumFreeRatio;
    // VACUUM rewrites the file and holds the write lock meanwhile: only when enough is free.
    if (vacuumed) db.exec("VACUUM");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    const after = Number(
      (db.prepare("PRAGMA page_count").get() as { page_count: number }).page_count,
    );
    const pageSize = Number(
      (db.prepare("PRAGMA page_size").get() as { page_size: number }).page_size,
    );
    return {
      vacuumed,
      free_pages_before: free,
      pages_before: pages,
      pages_after: after,
      bytes_reclaimed: (pages - after) * pageSize,
    };
  } finally {
    db.close();
  }
}

/** The tables whose growth an operator watches, with the column that dates a row. */
const TABLES: [string, string][] = [
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

function status(path: string) {
  const db = openExisting(path, { readOnly: true });
  try {
    const out = [];
    for (const [table, column] of TABLES) {
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
  } finally {
    db.close();
  }
}

self.onmessage = (e: MessageEvent<StoreJob>) => {
  const job = e.data;
  try {
    let result: unknown;
    if (job.kind === "integrity") {
      const db = openExisting(job.path, { readOnly: true });
      try {
        result = checkDb(db);
      } finally {
        db.close();
      }
    } else if (job.kind === "backup") {
      const db = openExisting(job.path, { readOnly: true });
      try {
        result = backupStore(db, job.out, { random: systemRandom });
      } finally {
        db.close();
      }
    } else if (job.kind === "status") {
      result = status(job.path);
    } else if (job.kind === "access_logs_before") {
      const db = openExisting(job.path, { readOnly: true });
      try {
        const r = db.prepare("SELECT COUNT(*) AS n FROM access_logs WHERE time < ?")
          .get(job.before) as { n: number };
        result = { rows: Number(r.n) };
      } finally {
        db.close();
      }
    } else {
      result = optimize(job.path, job.vacuumFreeRatio);
    }
    self.postMessage({ ok: true, result });
  } catch (err) {
    self.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) });
  }
};
