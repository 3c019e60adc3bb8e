/** SQL for approval requests of high-risk AI tool calls (`ai_approvals`). */
import type { Db } from "./store.ts";

export type AiApprovalStatus = "pending" | "applying" | "applied" | "rejected" | "failed";

export interface AiApprovalRow {
  readonly id: string;
  readonly conversation_id: string | null;
  readonly tool: string;
  /** The permission the change itself needs (the approver must hold it too). */
  readonly permission: string;
  readonly summary: string;
  /** JSON: the exact, validated change. */
  readonly change: string;
  readonly status: AiApprovalStatus;
  readonly requested_by: string;
  /** The human behind the requester (`user:<id>`), who may not approve it. */
  readonly requested_by_human: string;
  readonly requested_by_name: string;
  readonly requested_at: number;
  readonly decided_by: string | null;
  readonly decided_by_name: string | null;
  readonly decided_at: number | null;
  /** JSON: what applying produced (the new object's id) or why it failed. */
  readonly result: string | null;
}

export function createAiApprovalsRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO ai_approvals (id, conversation_id, tool, permission, summary, change, status,
       requested_by, requested_by_human, requested_by_name, requested_at)
     VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)`,
  );
  const get = db.prepare("SELECT * FROM ai_approvals WHERE id = ?");
  const list = db.prepare(
    `SELECT * FROM ai_approvals WHERE (:status IS NULL OR status = :status)
     ORDER BY requested_at DESC, id LIMIT :limit`,
  );
  // Moving out of a state is a compare-and-set, so two approvers racing cannot both apply.
  const decide = db.prepare(
    `UPDATE ai_approvals SET status = ?, decided_by = ?, decided_by_name = ?, decided_at = ?
     WHERE id = ? AND status = ?`,
  );
  const finish = db.prepare("UPDATE ai_approvals SET status = ?, result = ? WHERE id = ?");
  return {
    insert(
      row: Pick<
        AiApprovalRow,
        | "id"
        | "conversation_id"
        | "tool"
        | "permission"
        | "summary"
        | "change"
        | "requested_by"
        | "requested_by_human"
        | "requested_by_name"
        | "requested_at"
      >,
    ): void {
      insert.run(
        row.id,
        row.conversation_id,
        row.tool,
        row.permission,
        row.summary,
        row.change,
        row.requested_by,
        row.requested_by_human,
        row.requested_by_name,
        row.requested_at,
      );
    },
    get(id: string): AiApprovalRow | undefined {
      return get.get(id) as AiApprovalRow | undefined;
    },
    /** Newest first, optionally by status. */
    list(status: AiApprovalStatus | undefined, limit: number): AiApprovalRow[] {
      return list.all({ status: status ?? null, limit }) as unknown as AiApprovalRow[];
    },
    /** Moves `id` from `move.from` to `move.to` with the decider; false when it was no longer `from`. */
    decide(
      id: string,
      move: { from: AiApprovalStatus; to: AiApprovalStatus },
      by: { key: string; name: string },
      now: number,
    ): boolean {
      return Number(decide.run(move.to, by.key, by.name, now, id, move.from).changes) > 0;
    },
    finish(id: string, status: AiApprovalStatus, result: unknown): void {
      finish.run(status, JSON.stringify(result), id);
    },
  };
}

export type AiApprovalsRepo = ReturnType<typeof createAiApprovalsRepo>;
