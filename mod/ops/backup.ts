/**
 * Online backup of the management store: a `VACUUM INTO` snapshot written next to the target
 * under a temporary name, checked with `PRAGMA integrity_check`, made durable, then linked to
 * the final name, which fails instead of overwriting an existing file.
 */
import { integrityCheck, openExisting, schemaVersion, vacuumInto } from "../../db/maintenance.ts";
import type { SqliteDb as Db } from "../../db/store.ts";
import { type Random, randomHex } from "../core/random.ts";

export type BackupResult =
  | { kind: "ok"; path: string; bytes: number; schemaVersion: number }
  | { kind: "exists"; path: string }
  | { kind: "no_folder"; folder: string }
  | { kind: "not_a_folder"; folder: string }
  | { kind: "corrupt"; problems: readonly string[] };

export type CheckResult =
  | { kind: "ok"; schemaVersion: number }
  | { kind: "corrupt"; problems: readonly string[] };

function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      return false;
    }
    throw err;
  }
}

function splitPath(path: string): { dir: string; base: string } {
  const slash = path.lastIndexOf("/");
  return slash < 0
    ? { dir: ".", base: path }
    : { dir: path.slice(0, slash) || "/", base: path.slice(slash + 1) };
}

function fsync(path: string): void {
  const file = Deno.openSync(path, { read: true });
  try {
    file.syncSync();
  } finally {
    file.close();
  }
}

/** Runs the integrity check on a database file opened read-only. */
export function checkFile(path: string): CheckResult {
  const db = openExisting(path, { readOnly: true });
  try {
    return checkDb(db);
  } finally {
    db.close();
  }
}

/** Runs the integrity check on an open database. */
export function checkDb(db: Db): CheckResult {
  let problems: string[];
  try {
    problems = integrityCheck(db);
  } catch (err) {
    // Damage bad enough that SQLite cannot even walk the pages is a failed check too.
    return { kind: "corrupt", problems: [err instanceof Error ? err.message : String(err)] };
  }
  if (problems.length === 1 && problems[0] === "ok") {
    return { kind: "ok", schemaVersion: schemaVersion(db) };
  }
  return { kind: "corrupt", problems };
}

/** Takes a consistent snapshot of `db` into `out`; never overwrites an existing file. */
export function backupStore(db: Db, out: string, deps: { random: Random }): BackupResult {
  if (exists(out)) return { kind: "exists", path: out };
  const { dir, base } = splitPath(out);
  // SQLite would only say "unable to open database" about the temporary file.
  let folder: Deno.FileInfo;
  try {
    folder = Deno.statSync(dir);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { kind: "no_folder", folder: dir };
    throw err;
  }
  if (!folder.isDirectory) return { kind: "not_a_folder", folder: dir };
  const tmp = `${dir}/.${base}.${randomHex(deps.random, 8)}.tmp`;
  try {
    vacuumInto(db, tmp);
    Deno.chmodSync(tmp, 0o600);
    const check = checkFile(tmp);
    if (check.kind !== "ok") return check;
    fsync(tmp);
    try {
      // link() is the atomic "create only if absent": a file that appeared meanwhile is kept.
      Deno.linkSync(tmp, out);
    } catch (err) {
      if (err instanceof Deno.errors.AlreadyExists) return { kind: "exists", path: out };
      throw err;
    }
    fsync(dir);
    return {
      kind: "ok",
      path: out,
      bytes: Deno.statSync(out).size,
      schemaVersion: check.schemaVersion,
    };
  } finally {
    try {
      Deno.removeSync(tmp);
    } catch { /* never created, or already gone */ }
  }
}
