/** SQL for the append-only username-repair audit table (`waf user repair-username`). */
import type { Db } from "./store.ts";

export interface UsernameRepairRow {
  readonly id: number;
  readonly user_id: string;
  readonly old_username: string;
  readonly new_username: string;
  readonly reason: string;
  readonly os_user: string;
  readonly revoked_sessions: number;
  readonly time: number;
}

export type NewUsernameRepair = Omit<UsernameRepairRow, "id">;

export function createAccountRepairRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO username_repairs
       (user_id, old_username, new_username, reason, os_user, revoked_sessions, time)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const ofUser = db.prepare("SELECT * FROM username_repairs WHERE user_id = ? ORDER BY id");
  return {
    insert(row: NewUsernameRepair): number {
      return Number(
        insert.run(
          row.user_id,
          row.old_username,
          row.new_username,
          row.reason,
          row.os_user,
          row.revoked_sessions,
          row.time,
        ).lastInsertRowid,
      );
    },
    ofUser(userId: string): UsernameRepairRow[] {
      return ofUser.all(userId) as unknown as UsernameRepairRow[];
    },
  };
}

export type AccountRepairRepo = ReturnType<typeof createAccountRepairRepo>;
