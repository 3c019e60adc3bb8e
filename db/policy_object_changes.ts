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
import { type Db, engineOf } from "./store.ts";

let logs = 0;

/** Rows of the PostgreSQL change log kept behind the newest (every reader is far closer). */
const PG_KEEP = 100_000;

/**
 * The PostgreSQL store's log: one deployment-wide table written by a trigger, so a controller
 * also sees the changes other controllers commit; each log reads on from its own position.
 */
function createPgPolicyChangeLog(db: Db, kind: string) {
  const newest = db.prepare("SELECT COALESCE(MAX(seq), 0) AS seq FROM policy_object_changes");
  const pick = db.prepare(
    "SELECT seq, id FROM policy_object_changes WHERE kind = ? AND seq > ? ORDER BY seq LIMIT ?",
  );
  const prune = db.prepare("DELETE FROM policy_object_changes WHERE seq < ?");
  let cursor = Number(newest.get()!.seq);
  let uncertain: Set<string> | "many" | undefined;
  return {
    take(limit: number): string[] | "many" {
      const rows = pick.all(kind, cursor, Math.floor(limit) + 1) as Array<
        { seq: number; id: string }
      >;
      let ids: Set<string> | "many";
      if (rows.length > limit) {
        ids = "many";
        cursor = Number(newest.get()!.seq);
      } else {
        ids = new Set([...(uncertain === "many" ? [] : uncertain ?? []), ...rows.map((r) => r.id)]);
        if (uncertain === "many") ids = "many";
        if (rows.length > 0) cursor = rows[rows.length - 1]!.seq;
      }
      if (ids !== "many" && ids.size > limit) ids = "many";
      if (rows.length > 0 && cursor > PG_KEEP && !db.isTransaction) prune.run(cursor - PG_KEEP);
      uncertain = db.isTransaction ? ids : undefined;
      return ids === "many" ? ids : [...ids];
    },
  };
}

export function createPolicyChangeLog(db: Db, kind: string) {
  if (engineOf(db) === "postgresql") return createPgPolicyChangeLog(db, kind);
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
