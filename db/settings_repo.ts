/** SQL for the key/value `settings` table (JSON values, one row per key). */
import type { Db } from "./store.ts";

export function createSettingsRepo(db: Db) {
  const get = db.prepare("SELECT value FROM settings WHERE key = ?");
  const put = db.prepare(
    `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  );
  const del = db.prepare("DELETE FROM settings WHERE key = ?");
  return {
    /** The parsed JSON value under `key`, or undefined. */
    get(key: string): unknown {
      const row = get.get(key) as { value: string } | undefined;
      return row ? JSON.parse(row.value) : undefined;
    },
    set(key: string, value: unknown, now: number): void {
      put.run(key, JSON.stringify(value), now);
    },
    delete(key: string): boolean {
      return Number(del.run(key).changes) > 0;
    },
  };
}

export type SettingsRepo = ReturnType<typeof createSettingsRepo>;
