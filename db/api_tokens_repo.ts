/** SQL for management API tokens: only the SHA-256 of each secret is stored. */
import type { Db } from "./store.ts";

export interface ApiTokenRow {
  readonly id: string;
  readonly secret_hash: string;
  readonly note: string;
  readonly permissions: string;
  readonly created_by: string;
  readonly created_at: number;
  readonly expires_at: number | null;
  readonly revoked_at: number | null;
  readonly last_used_at: number | null;
  readonly last_used_ip: string | null;
}

export type NewApiToken = Omit<ApiTokenRow, "revoked_at" | "last_used_at" | "last_used_ip">;

export function createApiTokensRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO api_tokens (id, secret_hash, note, permissions, created_by, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const byId = db.prepare("SELECT * FROM api_tokens WHERE id = ?");
  const byHash = db.prepare("SELECT * FROM api_tokens WHERE secret_hash = ?");
  const all = db.prepare("SELECT * FROM api_tokens ORDER BY created_at DESC, id");
  const revoke = db.prepare(
    "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
  );
  const touch = db.prepare(
    "UPDATE api_tokens SET last_used_at = ?, last_used_ip = ? WHERE id = ?",
  );
  const stale = db.prepare(
    `SELECT id FROM api_tokens
     WHERE (expires_at IS NOT NULL AND expires_at <= :now)
        OR COALESCE(last_used_at, created_at) <= :idle_before`,
  );
  const remove = db.prepare("DELETE FROM api_tokens WHERE id = ?");
  return {
    insert(row: NewApiToken): void {
      insert.run(
        row.id,
        row.secret_hash,
        row.note,
        row.permissions,
        row.created_by,
        row.created_at,
        row.expires_at,
      );
    },
    get(id: string): ApiTokenRow | undefined {
      return byId.get(id) as ApiTokenRow | undefined;
    },
    getByHash(hash: string): ApiTokenRow | undefined {
      return byHash.get(hash) as ApiTokenRow | undefined;
    },
    list(): ApiTokenRow[] {
      return all.all() as unknown as ApiTokenRow[];
    },
    revoke(id: string, now: number): boolean {
      return Number(revoke.run(now, id).changes) > 0;
    },
    touch(id: string, now: number, ip: string): void {
      touch.run(now, ip, id);
    },
    /** Deletes expired tokens and tokens idle since `idleBefore`; returns their ids. */
    deleteStale(now: number, idleBefore: number): string[] {
      const ids = (stale.all({ now, idle_before: idleBefore }) as { id: string }[]).map((r) =>
        r.id
      );
      for (const id of ids) remove.run(id);
      return ids;
    },
  };
}

export type ApiTokensRepo = ReturnType<typeof createApiTokensRepo>;
