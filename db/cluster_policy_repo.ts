/**
 * SQL for the cluster's policy snapshot: every row the compiled policy is built from (`sites` and
 * `policy_objects`), read on the controller and replaced wholesale on a node.
 */
import type { PolicyObjectRow } from "./policy_objects_repo.ts";
import type { SiteRow } from "./sites_repo.ts";
import type { Db } from "./store.ts";

export interface PolicyRows {
  readonly sites: readonly SiteRow[];
  readonly objects: readonly PolicyObjectRow[];
}

/** A site row's columns in insertion order (also the canonical order of the policy version). */
export function siteValues(s: SiteRow): [string, string, string, number, number] {
  return [s.id, s.name, s.config, s.created_at, s.updated_at];
}

/** A policy object's columns in insertion order (also the canonical order). */
export function objectValues(
  o: PolicyObjectRow,
): [string, string, string | null, number, string, number, number] {
  return [o.id, o.kind, o.site_id, o.position, o.config, o.created_at, o.updated_at];
}

export function createClusterPolicyRepo(db: Db) {
  const sites = db.prepare(
    "SELECT id, name, config, created_at, updated_at FROM sites ORDER BY id",
  );
  const objects = db.prepare(
    `SELECT id, kind, site_id, position, config, created_at, updated_at FROM policy_objects
     ORDER BY id`,
  );
  const clearObjects = db.prepare("DELETE FROM policy_objects");
  const clearSites = db.prepare("DELETE FROM sites");
  const insertSite = db.prepare(
    "INSERT INTO sites (id, name, config, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
  );
  const insertObject = db.prepare(
    `INSERT INTO policy_objects (id, kind, site_id, position, config, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  return {
    read(): PolicyRows {
      return {
        sites: sites.all() as unknown as SiteRow[],
        objects: objects.all() as unknown as PolicyObjectRow[],
      };
    },
    /** Replaces every site and policy object; call inside a transaction. */
    replace(rows: PolicyRows): void {
      clearObjects.run();
      clearSites.run();
      for (const s of rows.sites) insertSite.run(...siteValues(s));
      for (const o of rows.objects) insertObject.run(...objectValues(o));
    },
  };
}

export type ClusterPolicyRepo = ReturnType<typeof createClusterPolicyRepo>;
