/**
 * Names of what audit records point at, looked up by the record's target: `user:<id>`,
 * `api_token:<id>`, `cluster_node:<id>`, or the bare id of a site or a policy object (rules,
 * lists, feeds, ALAP decisions). A target that names something since deleted, or no single
 * thing (`setup`, `storage`, a settings kind), has none.
 */
import type { Db } from "./store.ts";

export interface TargetName {
  /** `user`, `api_token`, `cluster_node`, `site`, or the policy object's kind (`custom_rule`, ...). */
  readonly type: string;
  readonly name: string;
}

export function createAuditTargetNames(db: Db) {
  const prefixed: Readonly<Record<string, ReturnType<Db["prepare"]>>> = {
    user: db.prepare("SELECT username AS name FROM users WHERE id = ?"),
    api_token: db.prepare("SELECT note AS name FROM api_tokens WHERE id = ?"),
    cluster_node: db.prepare("SELECT name FROM cluster_nodes WHERE id = ?"),
  };
  const site = db.prepare("SELECT name FROM sites WHERE id = ?");
  // A rule, list or feed by its name; an IP entry by its range; a decision by what it blocks.
  const object = db.prepare(
    `SELECT kind, COALESCE(
       json_extract(config, '$.name'),
       json_extract(config, '$.cidr'),
       json_extract(config, '$.kind') || ' ' || COALESCE(
         json_extract(config, '$.target.client_ip'), json_extract(config, '$.target.rule_id'))
     ) AS name
     FROM policy_objects WHERE id = ?`,
  );
  const named = (row: unknown): string | undefined => {
    const name = (row as { name?: unknown } | undefined)?.name;
    return typeof name === "string" && name !== "" ? name : undefined;
  };
  return {
    /** The type and name of `target`, or undefined when it names nothing that exists. */
    lookup(target: string): TargetName | undefined {
      const colon = target.indexOf(":");
      if (colon > 0) {
        const type = target.slice(0, colon);
        const stmt = prefixed[type];
        const name = stmt && named(stmt.get(target.slice(colon + 1)));
        return name === undefined ? undefined : { type, name };
      }
      const siteName = named(site.get(target));
      if (siteName !== undefined) return { type: "site", name: siteName };
      const row = object.get(target) as { kind: string; name: unknown } | undefined;
      const name = named(row);
      return row && name !== undefined ? { type: row.kind, name } : undefined;
    },
  };
}

export type AuditTargetNames = ReturnType<typeof createAuditTargetNames>;
