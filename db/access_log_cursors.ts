/**
 * SQL for shipping the access log elsewhere (the PostgreSQL sink): rows after a row id, and each
 * sink's persisted cursor (`access_log_cursors`). Records come back whole
 * (`AccessLogFormat.expand`).
 */
import type { SqliteDb as Db } from "./store.ts";
import { transaction } from "./store.ts";
import { type AccessLogFormat, expandRows, type StoredAccessLogRow } from "./access_log_rows.ts";

/** Where a sink starts shipping: after row id `cursor`; `saved` when it is persisted. */
export interface ShipStart {
  readonly cursor: number;
  readonly saved: boolean;
  /** Why it is not saved (the store refused the write). */
  readonly error?: string;
}

export function createShipCursorRepo(db: Db, format: AccessLogFormat) {
  const after = db.prepare(
    `SELECT id, trace_id, time, site_id, client_ip, method, host, path, status, action,
       attack_class, record FROM access_logs WHERE id > ? ORDER BY id LIMIT ?`,
  );
  const maxId = db.prepare("SELECT COALESCE(MAX(id), 0) AS n FROM access_logs");
  const firstSince = db.prepare(
    "SELECT MIN(id) AS n FROM access_logs WHERE time >= ? AND time <= ?",
  );
  const getCursor = db.prepare("SELECT last_id FROM access_log_cursors WHERE name = ?");
  const putCursor = db.prepare(
    `INSERT INTO access_log_cursors (name, last_id, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET last_id = excluded.last_id, updated_at = excluded.updated_at`,
  );
  return {
    /** Up to `limit` rows after row id `afterId`, oldest first, and the newest id stored. */
    readAfter(afterId: number, limit: number): { rows: StoredAccessLogRow[]; maxId: number } {
      return {
        rows: expandRows(format, after.all(afterId, limit) as unknown as StoredAccessLogRow[]),
        maxId: (maxId.get() as { n: number }).n,
      };
    },
    /** A shipping cursor (the last row id shipped), or undefined when never saved. */
    cursor(name: string): number | undefined {
      return (getCursor.get(name) as { last_id: number } | undefined)?.last_id;
    },
    saveCursor(name: string, lastId: number, now: number): void {
      putCursor.run(name, lastId, now);
    },
    /**
     * A sink's starting point in one step: its saved cursor, or, for a sink never started, where
     * it starts, saved as its cursor: the newest id stored now (a new sink does not replay the
     * retained history), or, given `since` (a start asked again after the store failed), the id
     * before the first row of a request that arrived between `since` and `now`: a row dated after
     * `now` is no row of a request since (it was stored while the clock was set ahead), and taking
     * it as the start re-shipped every row stored after it, the whole retained history. When the cursor's save
     * fails (a store locked by another writer, a full disk) the start read is still answered,
     * `saved: false`, with the error: the caller keeps it and saves it later, since asking again
     * later would start after the rows written in between.
     */
    startCursor(name: string, now: number, since?: number): ShipStart {
      const read = (): ShipStart => {
        const saved = (getCursor.get(name) as { last_id: number } | undefined)?.last_id;
        if (saved !== undefined) return { cursor: saved, saved: true };
        const first = since === undefined
          ? null
          : (firstSince.get(since, now) as { n: number | null }).n;
        return {
          cursor: first === null ? (maxId.get() as { n: number }).n : first - 1,
          saved: false,
        };
      };
      try {
        return transaction(db, () => {
          const start = read();
          if (!start.saved) putCursor.run(name, start.cursor, now);
          return { cursor: start.cursor, saved: true };
        });
      } catch (err) {
        // Reads go on while a write is refused; a store that cannot be read fails the request.
        return { ...read(), error: String(err) };
      }
    },
  };
}
