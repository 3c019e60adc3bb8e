/** SQL for notification channels, their deliveries and each delivery attempt. */
import { type Db, transaction } from "./store.ts";

export interface ChannelRow {
  readonly id: string;
  readonly name: string;
  readonly type: string;
  readonly enabled: number;
  /** JSON array of event kinds. */
  readonly events: string;
  /** JSON of the settings that may be shown. */
  readonly config: string;
  readonly secret_sealed: string | null;
  /** JSON of masked hints of the secrets (`{"url":"https://hooks.example/…"}`). */
  readonly secret_hint: string | null;
  readonly created_at: number;
  readonly updated_at: number;
}

export interface DeliveryRow {
  readonly id: string;
  readonly channel_id: string;
  readonly event: string;
  readonly payload: string;
  readonly status: "pending" | "delivered" | "failed";
  readonly attempts: number;
  readonly next_attempt_at: number | null;
  readonly created_at: number;
  readonly finished_at: number | null;
  readonly last_error: string | null;
}

export interface AttemptRow {
  readonly delivery_id: string;
  readonly attempt: number;
  readonly time: number;
  readonly ok: number;
  readonly status: number | null;
  readonly error: string | null;
  readonly duration_ms: number;
}

export function createNotifyRepo(db: Db) {
  const insertChannel = db.prepare(
    `INSERT INTO notification_channels
       (id, name, type, enabled, events, config, secret_sealed, secret_hint, created_at, updated_at)
     VALUES (:id, :name, :type, :enabled, :events, :config, :secret_sealed, :secret_hint,
             :created_at, :updated_at)`,
  );
  const updateChannel = db.prepare(
    `UPDATE notification_channels SET name = :name, enabled = :enabled, events = :events,
       config = :config, secret_sealed = :secret_sealed, secret_hint = :secret_hint,
       updated_at = :updated_at WHERE id = :id`,
  );
  const getChannel = db.prepare("SELECT * FROM notification_channels WHERE id = ?");
  const listChannels = db.prepare("SELECT * FROM notification_channels ORDER BY created_at, id");
  const deleteChannel = db.prepare("DELETE FROM notification_channels WHERE id = ?");
  const insertDelivery = db.prepare(
    `INSERT INTO notification_deliveries
       (id, channel_id, event, payload, status, attempts, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
  );
  const due = db.prepare(
    `SELECT * FROM notification_deliveries WHERE status = 'pending' AND next_attempt_at <= ?
     ORDER BY next_attempt_at LIMIT ?`,
  );
  // A compare-and-set on the due time: of several controllers draining one store, the one whose
  // update matches takes the attempt; the others see no change and leave the row alone.
  const claim = db.prepare(
    `UPDATE notification_deliveries SET next_attempt_at = ?
     WHERE id = ? AND status = 'pending' AND next_attempt_at = ?`,
  );
  const nextDue = db.prepare(
    "SELECT MIN(next_attempt_at) AS t FROM notification_deliveries WHERE status = 'pending'",
  );
  const finishAttempt = db.prepare(
    `UPDATE notification_deliveries SET status = ?, attempts = ?, next_attempt_at = ?,
       finished_at = ?, last_error = ? WHERE id = ?`,
  );
  const insertAttempt = db.prepare(
    `INSERT INTO notification_attempts (delivery_id, attempt, time, ok, status, error, duration_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const listDeliveries = db.prepare(
    `SELECT * FROM notification_deliveries WHERE channel_id = ?
       AND (? IS NULL OR created_at < ? OR (created_at = ? AND id < ?))
     ORDER BY created_at DESC, id DESC LIMIT ?`,
  );
  const attemptsOf = db.prepare(
    "SELECT * FROM notification_attempts WHERE delivery_id = ? ORDER BY attempt",
  );
  const getDelivery = db.prepare("SELECT * FROM notification_deliveries WHERE id = ?");
  const pruneDeliveries = db.prepare(
    "DELETE FROM notification_deliveries WHERE status != 'pending' AND created_at < ?",
  );
  const pending = db.prepare(
    "SELECT COUNT(*) AS n FROM notification_deliveries WHERE status = 'pending'",
  );

  return {
    insertChannel(row: ChannelRow): void {
      insertChannel.run({ ...row });
    },
    updateChannel(row: ChannelRow): void {
      updateChannel.run({
        id: row.id,
        name: row.name,
        enabled: row.enabled,
        events: row.events,
        config: row.config,
        secret_sealed: row.secret_sealed,
        secret_hint: row.secret_hint,
        updated_at: row.updated_at,
      });
    },
    getChannel(id: string): ChannelRow | undefined {
      return getChannel.get(id) as ChannelRow | undefined;
    },
    listChannels(): ChannelRow[] {
      return listChannels.all() as unknown as ChannelRow[];
    },
    deleteChannel(id: string): boolean {
      return Number(deleteChannel.run(id).changes) > 0;
    },
    insertDelivery(
      d: { id: string; channelId: string; event: string; payload: string; now: number },
    ): void {
      insertDelivery.run(d.id, d.channelId, d.event, d.payload, d.now, d.now);
    },
    due(now: number, limit: number): DeliveryRow[] {
      return due.all(now, limit) as unknown as DeliveryRow[];
    },
    /**
     * Takes a due delivery for one attempt: moves its due time from `seen` to `until` (the
     * attempt's deadline, after which a claimer that died is taken over); false when another
     * claimer took it first.
     */
    claim(id: string, seen: number, until: number): boolean {
      return Number(claim.run(until, id, seen).changes) === 1;
    },
    /** The earliest pending attempt time, or null. */
    nextDue(): number | null {
      return (nextDue.get() as { t: number | null }).t;
    },
    /** Records one attempt and the delivery's new state in one transaction. */
    recordAttempt(
      a: AttemptRow,
      next: { status: DeliveryRow["status"]; nextAt: number | null; finishedAt: number | null },
    ): void {
      transaction(db, () => {
        insertAttempt.run(a.delivery_id, a.attempt, a.time, a.ok, a.status, a.error, a.duration_ms);
        finishAttempt.run(
          next.status,
          a.attempt,
          next.nextAt,
          next.finishedAt,
          a.error,
          a.delivery_id,
        );
      });
    },
    getDelivery(id: string): DeliveryRow | undefined {
      return getDelivery.get(id) as DeliveryRow | undefined;
    },
    deliveries(
      channelId: string,
      options: { before?: { time: number; id: string }; limit: number },
    ): DeliveryRow[] {
      const t = options.before?.time ?? null;
      const id = options.before?.id ?? null;
      return listDeliveries.all(channelId, t, t, t, id, options.limit) as unknown as DeliveryRow[];
    },
    attempts(deliveryId: string): AttemptRow[] {
      return attemptsOf.all(deliveryId) as unknown as AttemptRow[];
    },
    pruneDeliveries(before: number): number {
      return Number(pruneDeliveries.run(before).changes);
    },
    pendingCount(): number {
      return (pending.get() as { n: number }).n;
    },
  };
}

export type NotifyRepo = ReturnType<typeof createNotifyRepo>;
