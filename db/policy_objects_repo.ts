/**
 * SQL for policy objects: the protection controls' JSON documents (IP list entries, ACL rules,
 * custom rules, bot policies, threat feeds, ALAP decisions, edge and block-page settings),
 * keyed by kind, optionally scoped to a site, ordered by position.
 */
import type { Db } from "./store.ts";

export interface PolicyObjectRow {
  readonly id: string;
  readonly kind: string;
  readonly site_id: string | null;
  readonly position: number;
  /** The document as JSON. */
  readonly config: string;
  readonly created_at: number;
  readonly updated_at: number;
}

export function createPolicyObjectsRepo(db: Db) {
  const byKind = db.prepare(
    "SELECT * FROM policy_objects WHERE kind = ? ORDER BY position, created_at, id",
  );
  const byId = db.prepare("SELECT * FROM policy_objects WHERE id = ? AND kind = ?");
  // The index is (kind, site_id, position): MAX(position) over a whole kind scans every row of
  // it, on each create; one MAX per site_id is one index seek each (see docs/data-plane.md, "How a
  // change reaches the running proxy").
  // Every non-null site_id is a site's (foreign key), so the sites list covers them all.
  const maxPosition = db.prepare(
    `SELECT COALESCE(MAX(p), 0) AS p FROM (
       SELECT MAX(position) AS p FROM policy_objects WHERE kind = ?1 AND site_id IS NULL
       UNION ALL
       SELECT (SELECT MAX(position) FROM policy_objects WHERE kind = ?1 AND site_id = s.id)
       FROM sites s) AS m`,
  );
  const insert = db.prepare(
    `INSERT INTO policy_objects (id, kind, site_id, position, config, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const update = db.prepare(
    "UPDATE policy_objects SET site_id = ?, position = ?, config = ?, updated_at = ? WHERE id = ? AND kind = ?",
  );
  const remove = db.prepare("DELETE FROM policy_objects WHERE id = ? AND kind = ?");
  const siteExists = db.prepare("SELECT 1 AS x FROM sites WHERE id = ?");
  return {
    list(kind: string): PolicyObjectRow[] {
      return byKind.all(kind) as unknown as PolicyObjectRow[];
    },
    get(kind: string, id: string): PolicyObjectRow | undefined {
      return byId.get(id, kind) as PolicyObjectRow | undefined;
    },
    nextPosition(kind: string): number {
      return Number((maxPosition.get(kind) as { p: number }).p) + 10;
    },
    insert(row: PolicyObjectRow): void {
      insert.run(
        row.id,
        row.kind,
        row.site_id,
        row.position,
        row.config,
        row.created_at,
        row.updated_at,
      );
    },
    update(row: Omit<PolicyObjectRow, "created_at">): boolean {
      return Number(
        update.run(row.site_id, row.position, row.config, row.updated_at, row.id, row.kind).changes,
      ) > 0;
    },
    remove(kind: string, id: string): boolean {
      return Number(remove.run(id, kind).changes) > 0;
    },
    siteExists(id: string): boolean {
      return siteExists.get(id) !== undefined;
    },
  };
}

export type PolicyObjectsRepo = ReturnType<typeof createPolicyObjectsRepo>;
