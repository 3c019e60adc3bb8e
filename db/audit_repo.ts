/**
 * SQL for the audit log: append-only, except aggregated authentication failures
 * (`retention = 'auth_failure'`), whose count and detail grow over their window and which
 * retention deletes (the store's triggers enforce both).
 */
import type { Db } from "./store.ts";

export interface AuditRow {
  readonly id: number;
  readonly time: number;
  readonly actor_type: string;
  readonly actor_id: string | null;
  readonly actor_name: string | null;
  readonly action: string;
  readonly target: string | null;
  readonly result: string;
  readonly client_ip: string | null;
  readonly trace_id: string | null;
  readonly detail: string | null;
  /** `forever`, or `auth_failure` for aggregated refused authentications (retention applies). */
  readonly retention: string;
  /** Events this record stands for (1, or more for an aggregated authentication failure). */
  readonly count: number;
}

export type NewAuditRow = Omit<AuditRow, "id" | "retention" | "count">;

export interface AuditFilter {
  readonly from?: number;
  readonly to?: number;
  /** Matches actor id or actor name exactly. */
  readonly actor?: string;
  readonly action?: string;
  readonly result?: string;
  /** Return rows with id below this (newest first). */
  readonly beforeId?: number;
  readonly limit: number;
}

export function createAuditRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO audit_log (time, actor_type, actor_id, actor_name, action, target, result, client_ip, trace_id, detail)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertAggregate = db.prepare(
    `INSERT INTO audit_log (time, actor_type, actor_id, actor_name, action, target, result, client_ip, trace_id, detail, retention, count)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'auth_failure', ?)`,
  );
  const updateAggregate = db.prepare(
    "UPDATE audit_log SET count = ?, detail = ?, trace_id = ? WHERE id = ? AND retention = 'auth_failure'",
  );
  const purge = db.prepare(
    `DELETE FROM audit_log WHERE id IN (
       SELECT id FROM audit_log WHERE retention = 'auth_failure' AND time < ? LIMIT ?)`,
  );
  const list = db.prepare(
    `SELECT * FROM audit_log
     WHERE (:from IS NULL OR time >= :from) AND (:to IS NULL OR time <= :to)
       AND (:actor IS NULL OR actor_id = :actor OR actor_name = :actor)
       AND (:action IS NULL OR action = :action) AND (:result IS NULL OR result = :result)
       AND (:before IS NULL OR id < :before)
     ORDER BY id DESC LIMIT :limit`,
  );
  return {
    insert(row: NewAuditRow): number {
      const r = insert.run(
        row.time,
        row.actor_type,
        row.actor_id,
        row.actor_name,
        row.action,
        row.target,
        row.result,
        row.client_ip,
        row.trace_id,
        row.detail,
      );
      return Number(r.lastInsertRowid);
    },
    /** Appends an aggregated authentication-failure record (its count can grow, retention applies). */
    insertAggregate(row: NewAuditRow, count: number): number {
      const r = insertAggregate.run(
        row.time,
        row.actor_type,
        row.actor_id,
        row.actor_name,
        row.action,
        row.target,
        row.result,
        row.client_ip,
        row.trace_id,
        row.detail,
        count,
      );
      return Number(r.lastInsertRowid);
    },
    /** Updates the count, detail and latest trace id of an aggregated record. */
    updateAggregate(id: number, count: number, detail: string, traceId: string | null): void {
      updateAggregate.run(count, detail, traceId, id);
    },
    /** Deletes up to `limit` aggregated authentication failures older than `before`. */
    purgeAuthFailures(before: number, limit: number): number {
      return Number(purge.run(before, limit).changes);
    },
    list(filter: AuditFilter): AuditRow[] {
      return list.all({
        from: filter.from ?? null,
        to: filter.to ?? null,
        actor: filter.actor ?? null,
        action: filter.action ?? null,
        result: filter.result ?? null,
        before: filter.beforeId ?? null,
        limit: filter.limit,
      }) as unknown as AuditRow[];
    },
  };
}

export type AuditRepo = ReturnType<typeof createAuditRepo>;
