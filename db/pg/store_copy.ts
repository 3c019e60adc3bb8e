/**
 * Copies a `temporary` deployment's management state (the SQLite store) into an empty
 * PostgreSQL store, for `waf store migrate`. Every table of the schema is copied except the
 * access log and its shipping cursors (`access_logs`, `access_log_cursors`): on `production`
 * each controller keeps its access log in a local file of its own (app/store.ts) and ships it
 * from there, so the old records stay in the old file, readable with the old data directory.
 *
 * Row ids and identity values are kept (ordering by `rowid` and references by id stay as they
 * were); afterwards each identity sequence is set past the highest id SQLite ever handed out
 * (`sqlite_sequence` included, so an AUTOINCREMENT id deleted before the move is not reused).
 * The copy runs in one transaction under the deployment's write lock and is verified inside it,
 * before the commit: per table the row count and an order-independent checksum (the sum of the
 * rows' SHA-256 digests) of both sides. Any failure rolls back and leaves the target empty.
 */
import { createHash } from "node:crypto";
import type { SQLOutputValue } from "node:sqlite";
import type { SqliteDb } from "../store.ts";
import { schemaVersion } from "../store.ts";
import { SCHEMA_VERSION } from "../migrations.ts";
import { ROWID_COLUMNS } from "./dialect.ts";
import type { PgDatabase } from "./pg_database.ts";

/** Tables that stay with the controller's local access-log file (not management state). */
export const LOCAL_TABLES: ReadonlySet<string> = new Set([
  "access_logs",
  "access_log_cursors",
  "schema_migrations",
]);

/** One copied table: rows and checksum of each side. */
export interface TableCopy {
  readonly table: string;
  readonly sourceRows: number;
  readonly targetRows: number;
  readonly sourceChecksum: string;
  readonly targetChecksum: string;
  readonly verified: boolean;
}

/** Why a copy was refused or undone; `table` names the table concerned when there is one. */
export class StoreCopyError extends Error {
  readonly kind: "not_empty" | "source_version" | "unknown_table" | "mismatch" | "failed";
  readonly table: string | undefined;
  readonly detail: Record<string, string | number>;
  constructor(
    kind: StoreCopyError["kind"],
    message: string,
    table?: string,
    detail: Record<string, string | number> = {},
  ) {
    super(message);
    this.name = "StoreCopyError";
    this.kind = kind;
    this.table = table;
    this.detail = detail;
  }
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A value as the checksum sees it: the same on both engines for the same stored value. */
function canonical(v: unknown): string {
  if (v === null || v === undefined) return "n";
  if (typeof v === "number" || typeof v === "bigint") return `i${String(v)}`;
  if (v instanceof Uint8Array) {
    return `b${Array.from(v, (b) => b.toString(16).padStart(2, "0")).join("")}`;
  }
  return `s${String(v)}`;
}

/** Order-independent checksum of a table's rows: the sum of each row's digest, mod 2^128. */
class TableSum {
  #sum = 0n;
  rows = 0;
  add(row: Record<string, unknown>, columns: readonly string[]): void {
    const h = createHash("sha256");
    for (const c of columns) {
      const text = canonical(row[c]);
      h.update(`${text.length}:${text}`);
    }
    this.#sum = (this.#sum + BigInt(`0x${h.digest("hex").slice(0, 32)}`)) & ((1n << 128n) - 1n);
    this.rows++;
  }
  get hex(): string {
    return this.#sum.toString(16).padStart(32, "0");
  }
}

/** The management tables of the source, in migration order (parents before children). */
export function managementTables(source: SqliteDb): string[] {
  const present = new Set(
    (source.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    ).all() as { name: string }[]).map((r) => r.name),
  );
  for (const name of present) {
    if (!LOCAL_TABLES.has(name) && !ROWID_COLUMNS.has(name)) {
      throw new StoreCopyError(
        "unknown_table",
        `The store has a table this binary does not know: ${name}`,
        name,
      );
    }
  }
  return [...ROWID_COLUMNS.keys()].filter((t) => present.has(t) && !LOCAL_TABLES.has(t));
}

/** Columns copied for `table`: the source's columns, and SQLite's implicit rowid when kept. */
function columnsOf(source: SqliteDb, table: string): string[] {
  const cols = (source.prepare(`PRAGMA table_info(${quote(table)})`).all() as { name: string }[])
    .map((c) => c.name);
  return ROWID_COLUMNS.get(table) === "rowid" ? ["rowid", ...cols] : cols;
}

const PG_MAX_PARAMS = 30_000;
const BATCH_ROWS = 500;

/** A statement in PostgreSQL's own dialect (not translated), on the store's connection. */
function pgQuery(target: PgDatabase, text: string, params: unknown[], writes?: string) {
  return target.query(
    { text, names: undefined, writes, returnsRowid: false, notice: true },
    params,
  );
}

/** Rows of `table` on the target that exist at all (the first one), for the emptiness check. */
function targetHasRows(target: PgDatabase, table: string): boolean {
  return pgQuery(target, `SELECT 1 AS one FROM ${quote(table)} LIMIT 1`, []).rows.length > 0;
}

/** Refuses a target whose management tables hold any row, naming the first such table. */
export function assertEmpty(target: PgDatabase, tables: readonly string[]): void {
  for (const table of tables) {
    if (targetHasRows(target, table)) {
      throw new StoreCopyError(
        "not_empty",
        `The target database is not empty: table ${table} holds rows`,
        table,
      );
    }
  }
}

function copyTable(source: SqliteDb, target: PgDatabase, table: string): TableCopy {
  const columns = columnsOf(source, table);
  const list = columns.map(quote).join(", ");
  const perBatch = Math.max(1, Math.min(BATCH_ROWS, Math.floor(PG_MAX_PARAMS / columns.length)));
  const sourceSum = new TableSum();
  let batch: unknown[] = [];
  let inBatch = 0;
  const flush = () => {
    if (inBatch === 0) return;
    const rows: string[] = [];
    for (let r = 0; r < inBatch; r++) {
      rows.push(`(${columns.map((_, c) => `$${r * columns.length + c + 1}`).join(", ")})`);
    }
    pgQuery(
      target,
      `INSERT INTO ${quote(table)} (${list}) OVERRIDING SYSTEM VALUE VALUES ${rows.join(", ")}`,
      batch,
      table,
    );
    batch = [];
    inBatch = 0;
  };
  const select = source.prepare(`SELECT ${list} FROM ${quote(table)}`);
  for (const row of select.iterate() as Iterable<Record<string, SQLOutputValue>>) {
    sourceSum.add(row, columns);
    for (const c of columns) {
      const v = row[c];
      batch.push(v instanceof Uint8Array ? v : v ?? null);
    }
    if (++inBatch >= perBatch) flush();
  }
  flush();
  resetIdentity(source, target, table);
  const targetSum = new TableSum();
  const order = columns.map((_, i) => String(i + 1)).join(", ");
  const page = 2_000;
  for (let offset = 0;; offset += page) {
    const { rows } = pgQuery(
      target,
      `SELECT ${list} FROM ${quote(table)} ORDER BY ${order} LIMIT ${page} OFFSET ${offset}`,
      [],
    );
    for (const row of rows) targetSum.add(row, columns);
    if (rows.length < page) break;
  }
  return {
    table,
    sourceRows: sourceSum.rows,
    targetRows: targetSum.rows,
    sourceChecksum: sourceSum.hex,
    targetChecksum: targetSum.hex,
    verified: sourceSum.rows === targetSum.rows && sourceSum.hex === targetSum.hex,
  };
}

/** Sets the table's identity sequence past every id the source handed out. */
function resetIdentity(source: SqliteDb, target: PgDatabase, table: string): void {
  const column = ROWID_COLUMNS.get(table);
  if (!column) return;
  let highest = Number(
    (source.prepare(`SELECT MAX(${quote(column)}) AS m FROM ${quote(table)}`).get()?.m) ?? 0,
  );
  const hasSeq = source.prepare(
    "SELECT 1 AS one FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'",
  ).get();
  if (hasSeq) {
    const seq = source.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?").get(table);
    highest = Math.max(highest, Number(seq?.seq ?? 0));
  }
  pgQuery(
    target,
    `SELECT setval(pg_get_serial_sequence($1, $2), $3, $4) AS v`,
    [quote(table), column, Math.max(highest, 1), highest > 0],
  );
}

/**
 * Copies every management table of `source` into `target` in one transaction and verifies the
 * copy before committing. Throws {@link StoreCopyError} (the target untouched) on a non-empty
 * target, a source at another schema version, or a copy that does not verify.
 */
export function copyStore(source: SqliteDb, target: PgDatabase): TableCopy[] {
  const version = schemaVersion(source);
  if (version !== SCHEMA_VERSION) {
    throw new StoreCopyError(
      "source_version",
      `The store is at schema version ${version}; this binary copies version ${SCHEMA_VERSION}`,
      undefined,
      { found: version, known: SCHEMA_VERSION },
    );
  }
  // One read transaction on the source: a consistent snapshot even if something still writes.
  source.exec("BEGIN");
  try {
    const tables = managementTables(source);
    target.exec("BEGIN IMMEDIATE");
    try {
      assertEmpty(target, tables);
      const copies = tables.map((table) => copyTable(source, target, table));
      const bad = copies.find((c) => !c.verified);
      if (bad) {
        throw new StoreCopyError(
          "mismatch",
          `The copy of ${bad.table} does not verify: ${bad.sourceRows} rows (${bad.sourceChecksum}) in the store, ${bad.targetRows} rows (${bad.targetChecksum}) in the database`,
          bad.table,
        );
      }
      target.exec("COMMIT");
      return copies;
    } catch (err) {
      if (target.isTransaction) target.exec("ROLLBACK");
      throw err;
    }
  } finally {
    source.exec("COMMIT");
  }
}
