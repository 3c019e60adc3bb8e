/**
 * The pending HTTP-01 answers of ACME orders, shared by a deployment's controllers: one
 * `settings` row per answer, `acme.http01.<host> <token>`, its value the key authorisation (what
 * the data plane answers in clear to anyone asking for the token, so not a secret). An answer
 * left by a controller that died mid-order is dropped after {@link STALE_MS}.
 */
import type { Db } from "./store.ts";

const PREFIX = "acme.http01.";
/** An order validates within minutes; an answer this old is a dead controller's. */
const STALE_MS = 3_600_000;

export function createAcmeChallengesRepo(db: Db, now: () => number) {
  const put = db.prepare(
    `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  );
  const del = db.prepare("DELETE FROM settings WHERE key = ?");
  const all = db.prepare(
    "SELECT key, value FROM settings WHERE substr(key, 1, length(?)) = ? AND updated_at >= ?",
  );
  return {
    put(host: string, token: string, keyAuthorization: string): void {
      put.run(`${PREFIX}${host} ${token}`, keyAuthorization, now());
    },
    delete(host: string, token: string): void {
      del.run(`${PREFIX}${host} ${token}`);
    },
    all(): { host: string; token: string; keyAuthorization: string }[] {
      const rows = all.all(PREFIX, PREFIX, now() - STALE_MS) as { key: string; value: string }[];
      return rows.map((r) => {
        const [host, token] = r.key.slice(PREFIX.length).split(" ") as [string, string];
        return { host, token, keyAuthorization: r.value };
      });
    },
  };
}
