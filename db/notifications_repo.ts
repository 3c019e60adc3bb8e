/** SQL for administrator notifications: stored with their parameters and link, and listed per reader. */
import type { Db } from "./store.ts";

export interface NotificationRow {
  readonly id: string;
  readonly time: number;
  readonly audience: string;
  readonly level: string;
  readonly kind: string;
  readonly title: string;
  readonly body: string;
  /** JSON object of the text's parameters; null for notifications stored before they had any. */
  readonly params: string | null;
  /** The console page the notification is about. */
  readonly link: string | null;
}

/** A notification with the read state of one reader. */
export interface NotificationReadRow extends NotificationRow {
  readonly read_at: number | null;
}

export function createNotificationsRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO notifications (id, time, audience, level, kind, title, body, params, link)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const list = db.prepare(
    `SELECT n.*, r.read_at FROM notifications n
       LEFT JOIN notification_reads r ON r.notification_id = n.id AND r.reader = :reader
     WHERE n.audience = :audience
       AND (:unread = 0 OR r.read_at IS NULL)
       AND (:before_time IS NULL OR n.time < :before_time
            OR (n.time = :before_time AND n.id < :before_id))
     ORDER BY n.time DESC, n.id DESC LIMIT :limit`,
  );
  const markRead = db.prepare(
    "INSERT OR IGNORE INTO notification_reads (notification_id, reader, read_at) VALUES (?, ?, ?)",
  );
  const byId = db.prepare(
    `SELECT n.*, r.read_at FROM notifications n
       LEFT JOIN notification_reads r ON r.notification_id = n.id AND r.reader = ?
     WHERE n.id = ?`,
  );
  return {
    insert(row: NotificationRow): void {
      insert.run(
        row.id,
        row.time,
        row.audience,
        row.level,
        row.kind,
        row.title,
        row.body,
        row.params,
        row.link,
      );
    },
    /** One notification with `reader`'s read state. */
    get(id: string, reader: string): NotificationReadRow | undefined {
      return byId.get(reader, id) as NotificationReadRow | undefined;
    },
    list(
      audience: string,
      reader: string,
      options: { unread: boolean; before?: { time: number; id: string }; limit: number },
    ): NotificationReadRow[] {
      return list.all({
        audience,
        reader,
        unread: options.unread ? 1 : 0,
        before_time: options.before?.time ?? null,
        before_id: options.before?.id ?? null,
        limit: options.limit,
      }) as unknown as NotificationReadRow[];
    },
    /** Marks `id` read for `reader` only; the first time stays. */
    markRead(id: string, reader: string, now: number): boolean {
      return Number(markRead.run(id, reader, now).changes) > 0;
    },
  };
}

export type NotificationsRepo = ReturnType<typeof createNotificationsRepo>;
