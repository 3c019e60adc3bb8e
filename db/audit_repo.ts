/** SQL for the append-only audit log. */
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
}

export type NewAuditRow = Omit<AuditRow, "id">;

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
