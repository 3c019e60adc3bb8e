/**
 * Read-only exports for the support archive (`waf logs pack`): the latest audit and access
 * rows through their own repositories, skipped for a store too old to have the table.
 */
import { createAccessLogRepo } from "./access_log_repo.ts";
import type { AccessLogFormat, StoredAccessLogRow } from "./access_log_rows.ts";
import { type AuditRow, createAuditRepo } from "./audit_repo.ts";
import type { Db, SqliteDb } from "./store.ts";

function hasTable(db: Db, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !==
    undefined;
}

/**
 * `db`: the management store (SQLite or PostgreSQL); `logDb`: the SQLite file of this
 * controller's access log (the same store on `temporary`). `format`: how the access log's
 * records read back (`lineFormat`, mod/access_log/lines.ts).
 */
export function createSupportExportRepo(
  db: Db | undefined,
  logDb: Db | undefined,
  format: AccessLogFormat,
) {
  const audit = db && hasTable(db, "audit_log") ? createAuditRepo(db) : undefined;
  const access = logDb && hasTable(logDb, "access_logs")
    ? createAccessLogRepo(logDb as SqliteDb, format)
    : undefined;
  return {
    /** The newest `limit` audit rows, oldest first; undefined when the table does not exist. */
    latestAudit(limit: number): AuditRow[] | undefined {
      return audit?.list({ limit }).reverse();
    },
    /** The newest `limit` access-log rows, oldest first; undefined when there is no table. */
    latestAccess(limit: number): StoredAccessLogRow[] | undefined {
      return access?.list({ limit }).reverse();
    },
  };
}
