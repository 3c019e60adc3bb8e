/**
 * Opens the embedded SQLite management store: WAL mode, foreign keys, a busy timeout, and the
 * ordered migrations. A database whose schema is newer than this binary knows is refused
 * before anything is written to it.
 */
import { DatabaseSync, type SQLOutputValue } from "node:sqlite";
import { ADDED_COLUMNS, MIGRATIONS, SCHEMA_VERSION } from "./migrations.ts";

/** A prepared statement of the management store, on either engine. */

/**
 * Marks a write no other controller reacts to (state such as the login lockout counts, read
 * back from the store when needed): its commit sends no change notice, so it costs the other
 * controllers nothing. A leading SQL comment, so SQLite runs the statement unchanged.
 */
export const NO_CHANGE_NOTICE = "/* no-change-notice */";

export interface Statement {
  // deno-lint-ignore no-explicit-any
  get(...params: any[]): Record<string, SQLOutputValue> | undefined;
  // deno-lint-ignore no-explicit-any
  all(...params: any[]): Record<string, SQLOutputValue>[];
  // deno-lint-ignore no-explicit-any
  run(...params: any[]): { changes: number | bigint; lastInsertRowid: number | bigint };
}

/**
 * The management store: SQLite's `DatabaseSync` (the `temporary` profile) or the PostgreSQL
 * store (db/pg/, the `production` profile), which takes the same SQL and keeps its semantics.
 */
export interface Db {
  prepare(sql: string): Statement;
  exec(sql: string): void;
  readonly isTransaction: boolean;
  readonly isOpen: boolean;
  close(): void;
}

/** The SQLite engine's handle (the access log's own database is always one). */
export type SqliteDb = DatabaseSync;

/** Which engine `db` is. */
export function engineOf(db: Db): "sqlite" | "postgresql" {
  return (db as { engine?: string }).engine === "postgresql" ? "postgresql" : "sqlite";
}

export class SchemaTooNewError extends Error {
  readonly found: number;
  readonly known: number;
  constructor(found: number, known: number) {
    super(
      `Database schema version ${found} is newer than this binary supports (version ${known}): upgrade waf or restore a backup taken before the upgrade`,
    );
    this.name = "SchemaTooNewError";
    this.found = found;
    this.known = known;
  }
}

const BUSY_TIMEOUT_MS = 5000;

/** Highest applied migration, 0 for an empty database. */
export function schemaVersion(db: Db): number {
  if (engineOf(db) === "postgresql") {
    const row = db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get();
    return Number(row?.v ?? 0);
  }
  const table = db.prepare(
    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
  ).get();
  if (!table) return 0;
  const row = db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as
    | { v: number | null }
    | undefined;
  return row?.v ?? 0;
}

/** One cheap round trip to the store (`SELECT 1`); throws when it cannot be reached. */
export function pingStore(db: Db): void {
  db.prepare("SELECT 1 AS one").get();
}

/** Reads the schema version without writing anything (read-only open). */
function peekVersion(path: string): number {
  try {
    Deno.statSync(path);
  } catch {
    return 0;
  }
  const db = new DatabaseSync(path, { readOnly: true, timeout: BUSY_TIMEOUT_MS });
  try {
    return schemaVersion(db);
  } finally {
    db.close();
  }
}

/**
 * Creates an empty database file readable by the owner only; SQLite gives its -wal and -shm
 * files the same mode, so password hashes and session hashes are never world-readable.
 */
function createPrivate(path: string): void {
  try {
    Deno.openSync(path, { createNew: true, write: true, mode: 0o600 }).close();
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  }
}

/** Applies migrations above the current version up to `target`, each in its own transaction. */
export function migrate(db: SqliteDb, target: number, now: number): number {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const current = schemaVersion(db);
  if (current > SCHEMA_VERSION) throw new SchemaTooNewError(current, SCHEMA_VERSION);
  const record = db.prepare(
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
  );
  for (const m of MIGRATIONS) {
    if (m.version <= current || m.version > target) continue;
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(m.sql);
      record.run(m.version, m.name, now);
      db.exec("COMMIT");
    } catch (err) {
      db.exec("ROLLBACK");
      throw new Error(`Migration ${m.version} ("${m.name}") failed`, { cause: err });
    }
  }
  const reached = schemaVersion(db);
  addMissingColumns(db, reached);
  return reached;
}

/** Adds the columns of `ADDED_COLUMNS` up to `version` that the store lacks, in one transaction. */
function addMissingColumns(db: SqliteDb, version: number): void {
  const missing = ADDED_COLUMNS.filter((c) =>
    c.version <= version &&
    !(db.prepare(`PRAGMA table_info(${c.table})`).all() as { name: string }[])
      .some((col) => col.name === c.column)
  );
  if (missing.length === 0) return;
  db.exec("BEGIN IMMEDIATE");
  try {
    for (const c of missing) {
      db.exec(`ALTER TABLE ${c.table} ADD COLUMN ${c.column} ${c.definition}`);
    }
    db.exec("COMMIT");
  } catch (err) {
    db.exec("ROLLBACK");
    throw new Error(`Adding ${missing.map((c) => `${c.table}.${c.column}`).join(", ")} failed`, {
      cause: err,
    });
  }
}

export interface OpenOptions {
  /** Stop at this schema version (tests build historical stores this way). */
  readonly targetVersion?: number;
  /** Time recorded with each applied migration (milliseconds). */
  readonly now: number;
}

/** Opens (creating when absent) and migrates the store at `path`. */
export function openStore(path: string, options: OpenOptions): SqliteDb {
  const found = peekVersion(path);
  if (found > SCHEMA_VERSION) throw new SchemaTooNewError(found, SCHEMA_VERSION);
  if (found === 0 && path !== ":memory:") createPrivate(path);
  const db = new DatabaseSync(path, { timeout: BUSY_TIMEOUT_MS });
  try {
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec("PRAGMA foreign_keys = ON");
    migrate(db, options.targetVersion ?? SCHEMA_VERSION, options.now);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

let savepoints = 0;

/**
 * Runs `fn` inside a transaction and rolls back when it throws. The outermost level is
 * `BEGIN IMMEDIATE` (takes the write lock up front, so a concurrent CLI writer waits on the
 * busy timeout instead of failing on a lock upgrade); nested calls use savepoints.
 */
export function transaction<T>(db: Db, fn: () => T): T {
  if (db.isTransaction) {
    const name = `sp${++savepoints}`;
    db.exec(`SAVEPOINT ${name}`);
    try {
      const result = fn();
      db.exec(`RELEASE ${name}`);
      return result;
    } catch (err) {
      db.exec(`ROLLBACK TO ${name}`);
      db.exec(`RELEASE ${name}`);
      throw err;
    }
  }
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = fn();
    db.exec("COMMIT");
    return result;
  } catch (err) {
    db.exec("ROLLBACK");
    throw err;
  }
}
