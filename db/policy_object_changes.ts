/**
 * Which policy objects of one kind changed since last asked, whatever changed them on this
 * connection: the management API, a site deleted with its entries (`ON DELETE CASCADE`), a
 * cluster node's policy replaced wholesale. Temporary triggers log each inserted, updated or
 * deleted row's id into a temporary table; a rolled-back change rolls its log back with it.
 * Temporary objects belong to the connection, not to the store file: the schema (and its
 * version) is unchanged, and an opened store starts with an empty log.
 *
 * Ids taken inside a transaction are named again by the next call made outside one: that
 * transaction may still roll back (the cluster follower rebuilds the policy inside its write, and
 * a policy that does not compile rolls the rows back), and its rollback takes the logged rows with
 * it, while the caller already applied what it read. Naming them again makes the caller read
 * them as stored; naming an unchanged id costs a lookup.
 */
import type { Db } from "./store.ts";

let logs = 0;

export function createPolicyChangeLog(db: Db, kind: string) {
  // One table per log: two logs of one kind on one connection would take each other's changes.
  const table = `temp.policy_changes_${++logs}`;
  const name = table.slice("temp.".length);
  const k = `'${kind.replaceAll("'", "''")}'`;
  db.exec(`CREATE TEMP TABLE ${name} (id TEXT NOT NULL)`);
  db.exec(`CREATE TEMP TRIGGER ${name}_insert AFTER INSERT ON main.policy_objects
    WHEN NEW.kind = ${k} BEGIN INSERT INTO ${table} VALUES (NEW.id); END`);
  db.exec(`CREATE TEMP TRIGGER ${name}_update AFTER UPDATE ON main.policy_objects
    WHEN OLD.kind = ${k} OR NEW.kind = ${k}
    BEGIN INSERT INTO ${table} VALUES (OLD.id); INSERT INTO ${table} VALUES (NEW.id); END`);
  db.exec(`CREATE TEMP TRIGGER ${name}_delete AFTER DELETE ON main.policy_objects
    WHEN OLD.kind = ${k} BEGIN INSERT INTO ${table} VALUES (OLD.id); END`);
  const pick = db.prepare(`SELECT id FROM ${table} LIMIT ?`);
  const clear = db.prepare(`DELETE FROM ${table}`);
  // What was taken inside a transaction not known to have committed: named again (see above).
  let uncertain: Set<string> | "many" | undefined;
  return {
    /**
     * The distinct ids changed since the last call, or "many" when more than `limit` changes
     * were logged; either way the log starts empty again.
     */
    take(limit: number): string[] | "many" {
      const rows = pick.all(Math.floor(limit) + 1) as Array<{ id: string }>;
      if (rows.length > 0) clear.run();
      let ids: Set<string> | "many" = rows.length > limit || uncertain === "many"
        ? "many"
        : new Set([...(uncertain ?? []), ...rows.map((r) => r.id)]);
      if (ids !== "many" && ids.size > limit) ids = "many";
      uncertain = db.isTransaction ? ids : undefined;
      return ids === "many" ? ids : [...ids];
    },
  };
}

export type PolicyChangeLog = ReturnType<typeof createPolicyChangeLog>;
