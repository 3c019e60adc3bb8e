/**
 * Maintenance SQL on an existing store file: opening it without migrating (a backup taken before
 * an upgrade must be of the old schema), the online snapshot, and the integrity check.
 */
import { DatabaseSync } from "node:sqlite";
import { schemaVersion, type SqliteDb as Db } from "./store.ts";

const BUSY_TIMEOUT_MS = 5000;

/**
 * Opens an existing store file as it is: no migration, no journal-mode change. Throws
 * `Deno.errors.NotFound` when the file is absent (SQLite would otherwise create it).
 */
export function openExisting(path: string, options: { readOnly: boolean }): Db {
  Deno.statSync(path);
  return new DatabaseSync(path, { readOnly: options.readOnly, timeout: BUSY_TIMEOUT_MS });
}

/**
 * Writes a transactionally consistent copy of `db` to `path` with `VACUUM INTO`. It reads inside
 * one read transaction, so commits still in the write-ahead log are included and concurrent
 * writers are neither blocked nor half-copied. SQLite refuses an existing non-empty `path`.
 */
export function vacuumInto(db: Db, path: string): void {
  db.prepare("VACUUM INTO ?").run(path);
}

/** `PRAGMA integrity_check`: `["ok"]` for a sound database, else one line per problem. */
export function integrityCheck(db: Db): string[] {
  return db.prepare("PRAGMA integrity_check").all().map((row) =>
    String((row as Record<string, unknown>)["integrity_check"])
  );
}

export { schemaVersion };
