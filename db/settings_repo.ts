/** SQL for the key/value `settings` table (JSON values, one row per key). */
import type { Db } from "./store.ts";

export function createSettingsRepo(db: Db) {
  const get = db.prepare("SELECT value FROM settings WHERE key = ?");
  const put = db.prepare(
    `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  );
  const putNew = db.prepare(
    `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(key) DO NOTHING`,
  );
  const del = db.prepare("DELETE FROM settings WHERE key = ?");
  const byPrefix = db.prepare(
    "SELECT key, value FROM settings WHERE substr(key, 1, length(?)) = ? ORDER BY key",
  );
  return {
    /** The parsed JSON value under `key`, or undefined. */
    get(key: string): unknown {
      const row = get.get(key) as { value: string } | undefined;
      return row ? JSON.parse(row.value) : undefined;
    },
    set(key: string, value: unknown, now: number): void {
      put.run(key, JSON.stringify(value), now);
    },
    /** Stores `value` unless `key` holds one already (atomic); true when it was stored. */
    setIfAbsent(key: string, value: unknown, now: number): boolean {
      return Number(putNew.run(key, JSON.stringify(value), now).changes) > 0;
    },
    /** Every row whose key starts with `prefix`, parsed. */
    list(prefix: string): { key: string; value: unknown }[] {
      return (byPrefix.all(prefix, prefix) as { key: string; value: string }[])
        .map((r) => ({ key: r.key, value: JSON.parse(r.value) }));
    },
    delete(key: string): boolean {
      return Number(del.run(key).changes) > 0;
    },
  };
}

export type SettingsRepo = ReturnType<typeof createSettingsRepo>;
