/** SQL for administrator notifications (stored and listed; delivery channels come later). */
import type { Db } from "./store.ts";

export interface NotificationRow {
  readonly id: string;
  readonly time: number;
  readonly audience: string;
  readonly level: string;
  readonly kind: string;
  readonly title: string;
  readonly body: string;
  readonly read_at: number | null;
}

export function createNotificationsRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO notifications (id, time, audience, level, kind, title, body)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const list = db.prepare(
    `SELECT * FROM notifications WHERE audience = :audience
       AND (:unread = 0 OR read_at IS NULL)
       AND (:before_time IS NULL OR time < :before_time OR (time = :before_time AND id < :before_id))
     ORDER BY time DESC, id DESC LIMIT :limit`,
  );
  const markRead = db.prepare(
    "UPDATE notifications SET read_at = ? WHERE id = ? AND read_at IS NULL",
  );
  const byId = db.prepare("SELECT * FROM notifications WHERE id = ?");
  return {
    insert(row: Omit<NotificationRow, "read_at">): void {
      insert.run(row.id, row.time, row.audience, row.level, row.kind, row.title, row.body);
    },
    get(id: string): NotificationRow | undefined {
      return byId.get(id) as NotificationRow | undefined;
    },
    list(
      audience: string,
      options: { unread: boolean; before?: { time: number; id: string }; limit: number },
    ): NotificationRow[] {
      return list.all({
        audience,
        unread: options.unread ? 1 : 0,
        before_time: options.before?.time ?? null,
        before_id: options.before?.id ?? null,
        limit: options.limit,
      }) as unknown as NotificationRow[];
    },
    markRead(id: string, now: number): boolean {
      return Number(markRead.run(now, id).changes) > 0;
    },
  };
}

export type NotificationsRepo = ReturnType<typeof createNotificationsRepo>;
