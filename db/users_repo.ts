/**
 * SQL for accounts and admin sessions. Every security-relevant change to an account
 * (password, role, username, 2FA state, disabled flag) advances its credential epoch in the
 * same statement, so sessions that copied the old epoch stop working at their next request.
 * Usernames are stored byte for byte: nothing here trims or case-folds.
 */
import type { Db } from "./store.ts";

export interface UserRow {
  readonly id: string;
  readonly username: string;
  readonly password_hash: string;
  readonly role: string;
  readonly disabled: number;
  readonly created_at: number;
  readonly updated_at: number;
  readonly totp_enabled: number;
  readonly totp_secret_enc: string | null;
  readonly totp_last_step: number | null;
  readonly credential_epoch: number;
}

export interface NewUser {
  readonly id: string;
  readonly username: string;
  readonly password_hash: string;
  readonly role: string;
  readonly now: number;
}

export interface SessionRow {
  readonly id_hash: string;
  readonly user_id: string;
  readonly created_at: number;
  readonly last_seen_at: number;
  readonly expires_at: number;
  readonly revoked_at: number | null;
  readonly client_ip: string | null;
  readonly user_agent: string | null;
  readonly credential_epoch: number;
}

export type NewSession = Omit<SessionRow, "revoked_at" | "last_seen_at">;

/** Every column of `users`, in the order the session's joined read names them. */
export const USER_COLUMNS = [
  "id",
  "username",
  "password_hash",
  "role",
  "disabled",
  "created_at",
  "updated_at",
  "totp_enabled",
  "totp_secret_enc",
  "totp_last_step",
  "credential_epoch",
] as const satisfies readonly (keyof UserRow)[];

const EPOCH = "credential_epoch = credential_epoch + 1";

export function createUsersRepo(db: Db) {
  const insertUser = db.prepare(
    `INSERT INTO users (id, username, password_hash, role, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const byId = db.prepare("SELECT * FROM users WHERE id = ?");
  const byUsername = db.prepare("SELECT * FROM users WHERE username = ?");
  const all = db.prepare("SELECT * FROM users ORDER BY created_at, rowid");
  const count = db.prepare("SELECT COUNT(*) AS n FROM users");
  const setPassword = db.prepare(
    `UPDATE users SET password_hash = ?, updated_at = ?, ${EPOCH} WHERE id = ?`,
  );
  // A rehash at login keeps the same password, so it is not a credential change.
  const rehash = db.prepare("UPDATE users SET password_hash = ? WHERE id = ?");
  const setRole = db.prepare(`UPDATE users SET role = ?, updated_at = ?, ${EPOCH} WHERE id = ?`);
  const setUsername = db.prepare(
    `UPDATE users SET username = ?, updated_at = ?, ${EPOCH} WHERE id = ?`,
  );
  const setDisabled = db.prepare(
    `UPDATE users SET disabled = ?, updated_at = ?, ${EPOCH} WHERE id = ?`,
  );
  const setTotp = db.prepare(
    `UPDATE users SET totp_enabled = ?, totp_secret_enc = ?, totp_last_step = NULL,
       updated_at = ?, ${EPOCH} WHERE id = ?`,
  );
  const advance = db.prepare(`UPDATE users SET updated_at = ?, ${EPOCH} WHERE id = ?`);
  const carry = db.prepare(
    `UPDATE admin_sessions SET ${EPOCH}
     WHERE id_hash = ? AND user_id = ? AND credential_epoch = ? AND revoked_at IS NULL`,
  );

  const insertSession = db.prepare(
    `INSERT INTO admin_sessions (id_hash, user_id, created_at, last_seen_at, expires_at,
       client_ip, user_agent, credential_epoch)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const session = db.prepare("SELECT * FROM admin_sessions WHERE id_hash = ?");
  // A request's session and its user in one statement (one round trip on PostgreSQL).
  const sessionAndUser = db.prepare(
    `SELECT s.*, ${USER_COLUMNS.map((c) => `u.${c} AS u__${c}`).join(", ")}
     FROM admin_sessions s LEFT JOIN users u ON u.id = s.user_id WHERE s.id_hash = ?`,
  );
  const touch = db.prepare("UPDATE admin_sessions SET last_seen_at = ? WHERE id_hash = ?");
  const revoke = db.prepare(
    "UPDATE admin_sessions SET revoked_at = ? WHERE id_hash = ? AND revoked_at IS NULL",
  );
  const revokeUser = db.prepare(
    "UPDATE admin_sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL",
  );
  const purge = db.prepare(
    "DELETE FROM admin_sessions WHERE expires_at < ? OR (revoked_at IS NOT NULL AND revoked_at < ?)",
  );

  const changed = (r: { changes: number | bigint }) => Number(r.changes) > 0;

  return {
    insert(user: NewUser): void {
      insertUser.run(user.id, user.username, user.password_hash, user.role, user.now, user.now);
    },
    get(id: string): UserRow | undefined {
      return byId.get(id) as UserRow | undefined;
    },
    /** Exact, byte-for-byte lookup. */
    getByUsername(username: string): UserRow | undefined {
      return byUsername.get(username) as UserRow | undefined;
    },
    list(): UserRow[] {
      return all.all() as unknown as UserRow[];
    },
    count(): number {
      return Number((count.get() as { n: number }).n);
    },
    /** New password hash; advances the epoch. */
    updatePassword(id: string, passwordHash: string, now: number): boolean {
      return changed(setPassword.run(passwordHash, now, id));
    },
    /** Replaces the stored hash of an unchanged password (a stronger work factor). */
    rehashPassword(id: string, passwordHash: string): void {
      rehash.run(passwordHash, id);
    },
    updateRole(id: string, role: string, now: number): boolean {
      return changed(setRole.run(role, now, id));
    },
    updateUsername(id: string, username: string, now: number): boolean {
      return changed(setUsername.run(username, now, id));
    },
    setDisabled(id: string, disabled: boolean, now: number): boolean {
      return changed(setDisabled.run(disabled ? 1 : 0, now, id));
    },
    /** Turns 2FA on (with the encrypted secret) or off (secret cleared). */
    setTotp(id: string, secretEnc: string | null, now: number): boolean {
      return changed(setTotp.run(secretEnc === null ? 0 : 1, secretEnc, now, id));
    },
    /**
     * Moves one live session of `userId` from epoch `from` to the next, after a change that
     * advanced the account's epoch once and should keep this session (turning one's own 2FA
     * on); false when the session was not at `from` (another change came first).
     */
    carrySession(idHash: string, userId: string, from: number): boolean {
      return changed(carry.run(idHash, userId, from));
    },
    /** Advances the credential epoch without another change (e.g. "log out everywhere"). */
    advanceEpoch(id: string, now: number): boolean {
      return changed(advance.run(now, id));
    },

    insertSession(s: NewSession): void {
      insertSession.run(
        s.id_hash,
        s.user_id,
        s.created_at,
        s.created_at,
        s.expires_at,
        s.client_ip,
        s.user_agent,
        s.credential_epoch,
      );
    },
    getSession(idHash: string): SessionRow | undefined {
      return session.get(idHash) as SessionRow | undefined;
    },
    /** The session and its user (undefined when the user is gone), read together. */
    getSessionAndUser(
      idHash: string,
    ): { session: SessionRow; user: UserRow | undefined } | undefined {
      const row = sessionAndUser.get(idHash) as Record<string, unknown> | undefined;
      if (!row) return undefined;
      const s: Record<string, unknown> = {};
      const u: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(row)) {
        if (k.startsWith("u__")) u[k.slice(3)] = v;
        else s[k] = v;
      }
      return {
        session: s as unknown as SessionRow,
        user: u["id"] === null || u["id"] === undefined ? undefined : u as unknown as UserRow,
      };
    },
    touchSession(idHash: string, now: number): void {
      touch.run(now, idHash);
    },
    revokeSession(idHash: string, now: number): boolean {
      return changed(revoke.run(now, idHash));
    },
    /** Revokes every live session of a user; returns how many were revoked. */
    revokeAllSessions(userId: string, now: number): number {
      return Number(revokeUser.run(now, userId).changes);
    },
    /** Deletes sessions past their absolute expiry and revoked ones older than `before`. */
    purgeSessions(now: number, before: number): number {
      return Number(purge.run(now, before).changes);
    },
  };
}

export type UsersRepo = ReturnType<typeof createUsersRepo>;
