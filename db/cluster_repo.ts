/** SQL for the cluster: one-time join tokens (secret hashes only) and enrolled nodes. */
import type { Db } from "./store.ts";

export interface JoinTokenRow {
  readonly id: string;
  readonly secret_hash: string;
  readonly note: string;
  readonly created_by: string;
  readonly created_at: number;
  readonly expires_at: number;
  readonly used_at: number | null;
}

export interface NodeRow {
  readonly id: string;
  readonly name: string;
  readonly cert_serial: string;
  readonly cert_fingerprint: string;
  readonly cert_not_after: number;
  readonly enrolled_at: number;
  readonly revoked_at: number | null;
  /** `enrolled`, `online`, `stale`, `offline` or `revoked`. */
  readonly status: string;
  readonly last_heartbeat_at: number | null;
  readonly last_ip: string | null;
  /** The last heartbeat's report (JSON). */
  readonly report: string | null;
}

/** A renewed certificate of a node, signed but not yet presented by it. */
export interface RenewalRow {
  readonly node_id: string;
  readonly cert_serial: string;
  readonly cert_fingerprint: string;
  readonly cert_not_after: number;
  readonly issued_at: number;
}

/** What one heartbeat records about a node. */
export interface Heartbeat {
  readonly at: number;
  readonly ip: string;
  /** The node's report (JSON). */
  readonly report: string;
  readonly status: string;
}

export type NewNode = Pick<
  NodeRow,
  "id" | "name" | "cert_serial" | "cert_fingerprint" | "cert_not_after" | "enrolled_at"
>;

export function createClusterRepo(db: Db) {
  const insertToken = db.prepare(
    `INSERT INTO cluster_join_tokens (id, secret_hash, note, created_by, created_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  const tokenById = db.prepare("SELECT * FROM cluster_join_tokens WHERE id = ?");
  const tokens = db.prepare(
    "SELECT * FROM cluster_join_tokens WHERE used_at IS NULL AND expires_at > ? ORDER BY created_at DESC",
  );
  const useToken = db.prepare(
    "UPDATE cluster_join_tokens SET used_at = ? WHERE id = ? AND used_at IS NULL AND expires_at > ?",
  );
  const deleteToken = db.prepare(
    "DELETE FROM cluster_join_tokens WHERE id = ? AND used_at IS NULL",
  );
  const purgeTokens = db.prepare(
    "DELETE FROM cluster_join_tokens WHERE expires_at <= ? AND used_at IS NULL",
  );
  const insertNode = db.prepare(
    `INSERT INTO cluster_nodes (id, name, cert_serial, cert_fingerprint, cert_not_after,
       enrolled_at, status) VALUES (?, ?, ?, ?, ?, ?, 'enrolled')`,
  );
  const nodeById = db.prepare("SELECT * FROM cluster_nodes WHERE id = ?");
  const nodes = db.prepare("SELECT * FROM cluster_nodes ORDER BY name, id");
  const heartbeat = db.prepare(
    `UPDATE cluster_nodes SET last_heartbeat_at = ?, last_ip = ?, report = ?, status = ?
     WHERE id = ? AND revoked_at IS NULL`,
  );
  const setStatus = db.prepare(
    "UPDATE cluster_nodes SET status = ? WHERE id = ? AND revoked_at IS NULL",
  );
  const revoke = db.prepare(
    "UPDATE cluster_nodes SET revoked_at = ?, status = 'revoked' WHERE id = ? AND revoked_at IS NULL",
  );
  const removeNode = db.prepare(
    "DELETE FROM cluster_nodes WHERE id = ? AND revoked_at IS NOT NULL",
  );
  const renewalById = db.prepare("SELECT * FROM cluster_node_renewals WHERE node_id = ?");
  const putRenewal = db.prepare(
    `INSERT INTO cluster_node_renewals
       (node_id, cert_serial, cert_fingerprint, cert_not_after, issued_at)
     VALUES (:node_id, :cert_serial, :cert_fingerprint, :cert_not_after, :issued_at)
     ON CONFLICT (node_id) DO UPDATE SET cert_serial = excluded.cert_serial,
       cert_fingerprint = excluded.cert_fingerprint, cert_not_after = excluded.cert_not_after,
       issued_at = excluded.issued_at`,
  );
  const setCertificate = db.prepare(
    `UPDATE cluster_nodes SET cert_serial = ?, cert_fingerprint = ?, cert_not_after = ?
     WHERE id = ? AND revoked_at IS NULL`,
  );
  const deleteRenewal = db.prepare("DELETE FROM cluster_node_renewals WHERE node_id = ?");
  return {
    insertToken(row: Omit<JoinTokenRow, "used_at">): void {
      insertToken.run(
        row.id,
        row.secret_hash,
        row.note,
        row.created_by,
        row.created_at,
        row.expires_at,
      );
    },
    token(id: string): JoinTokenRow | undefined {
      return tokenById.get(id) as JoinTokenRow | undefined;
    },
    /** Tokens not used and not expired at `now`. */
    openTokens(now: number): JoinTokenRow[] {
      return tokens.all(now) as unknown as JoinTokenRow[];
    },
    /** Marks a token used; false when it was used or expired already (single use). */
    useToken(id: string, now: number): boolean {
      return Number(useToken.run(now, id, now).changes) === 1;
    },
    deleteToken(id: string): boolean {
      return Number(deleteToken.run(id).changes) === 1;
    },
    purgeExpiredTokens(now: number): number {
      return Number(purgeTokens.run(now).changes);
    },
    insertNode(row: NewNode): void {
      insertNode.run(
        row.id,
        row.name,
        row.cert_serial,
        row.cert_fingerprint,
        row.cert_not_after,
        row.enrolled_at,
      );
    },
    node(id: string): NodeRow | undefined {
      return nodeById.get(id) as NodeRow | undefined;
    },
    nodes(): NodeRow[] {
      return nodes.all() as unknown as NodeRow[];
    },
    heartbeat(id: string, beat: Heartbeat): boolean {
      return Number(heartbeat.run(beat.at, beat.ip, beat.report, beat.status, id).changes) === 1;
    },
    setStatus(id: string, status: string): void {
      setStatus.run(status, id);
    },
    revoke(id: string, now: number): boolean {
      return Number(revoke.run(now, id).changes) === 1;
    },
    renewal(id: string): RenewalRow | undefined {
      return renewalById.get(id) as RenewalRow | undefined;
    },
    /** Records a renewed certificate (replacing an earlier one the node never presented). */
    putRenewal(row: RenewalRow): void {
      putRenewal.run({ ...row });
    },
    /** Makes the renewed certificate the registered one; false when the node is revoked. */
    promoteRenewal(row: RenewalRow): boolean {
      const changed = Number(
        setCertificate.run(row.cert_serial, row.cert_fingerprint, row.cert_not_after, row.node_id)
          .changes,
      ) === 1;
      deleteRenewal.run(row.node_id);
      return changed;
    },
    /** Deletes a revoked node; false when it is unknown or not revoked. */
    removeNode(id: string): boolean {
      return Number(removeNode.run(id).changes) === 1;
    },
  };
}

export type ClusterRepo = ReturnType<typeof createClusterRepo>;
