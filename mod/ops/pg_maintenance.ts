/**
 * The store's scheduled maintenance on the production profile, where the store is PostgreSQL:
 * the integrity check reads and counts every management table, the backup runs `pg_dump`
 * (custom format, checked with `pg_restore --list`) into the backup folder, and the optimisation
 * runs `ANALYZE` (PostgreSQL's autovacuum reclaims space itself). Each opens a short connection
 * of its own, so nothing here waits on the store's synchronous connection, and the DSN's password
 * reaches neither a command line nor an error (it goes to `pg_dump` through `PGPASSWORD`).
 */
import type postgres from "postgres";
import { ROWID_COLUMNS } from "../../db/pg/dialect.ts";
import { openPostgres } from "../../db/pg_sink.ts";
import type { ProductionStoreOptions } from "../config/production.ts";
import { redactDsn } from "../config/production.ts";
import { backupName, rotateBackups } from "./store_jobs.ts";
import { pathExists } from "../core/fs.ts";

/** One statement and its rows: the store's own connection or a pool of {@link openPostgres}. */
export type Query = (text: string) => Promise<readonly Record<string, unknown>[]>;

/** The tables the production check counts: the management tables, not the local access log. */
export function managementTableNames(): string[] {
  return [...ROWID_COLUMNS.keys(), "schema_migrations"].filter((t) =>
    t !== "access_logs" && t !== "access_log_cursors"
  );
}

export interface PgCheck {
  readonly schema_version: number;
  readonly tables: readonly { readonly table: string; readonly rows: number }[];
}

/** The schema version and every management table read to its end and counted. */
export async function checkPgTables(query: Query): Promise<PgCheck> {
  const v = await query("SELECT MAX(version) AS v FROM schema_migrations");
  const tables = [];
  for (const table of managementTableNames()) {
    const rows = await query(`SELECT COUNT(*) AS n FROM ${table}`);
    tables.push({ table, rows: Number(rows[0]?.["n"] ?? 0) });
  }
  return { schema_version: Number(v[0]?.["v"] ?? 0), tables };
}

/** A one-connection pool on the store's schema, closed after `fn`. */
export async function withPgConnection<T>(
  pg: ProductionStoreOptions,
  fn: (sql: postgres.Sql) => Promise<T>,
): Promise<T> {
  const sql = openPostgres({
    dsn: pg.dsn,
    poolSize: 1,
    connectTimeoutSeconds: Math.max(1, Math.ceil(pg.connectTimeoutMs / 1000)),
    connection: { search_path: pg.schema, application_name: "waf-maintenance" },
  });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 2 }).catch(() => {});
  }
}

/** The `store-integrity` task on production. */
export function checkPgStore(pg: ProductionStoreOptions): Promise<PgCheck> {
  return withPgConnection(pg, (sql) => checkPgTables((text) => sql.unsafe(text)));
}

/** The `store-optimize` task on production: `ANALYZE` of every management table. */
export function analyzePgStore(pg: ProductionStoreOptions): Promise<{ analyzed: number }> {
  return withPgConnection(pg, async (sql) => {
    const tables = managementTableNames();
    for (const t of tables) await sql.unsafe(`ANALYZE ${t}`);
    return { analyzed: tables.length };
  });
}

/** A libpq connection URI without its password, and the password apart (for `PGPASSWORD`). */
export function splitPassword(dsn: string): { uri: string; password: string | undefined } {
  let url: URL;
  try {
    url = new URL(dsn);
  } catch {
    return { uri: dsn, password: undefined };
  }
  const query = url.searchParams.get("password");
  const password = url.password ? decodeURIComponent(url.password) : query ?? undefined;
  url.password = "";
  url.searchParams.delete("password");
  return { uri: url.toString(), password };
}

export interface PgDumpResult {
  readonly path: string;
  readonly bytes: number;
  readonly removed: string[];
}

/** What a `pg_dump` run needs besides the store's options. */
export interface PgDumpDeps {
  /** `pg_dump` and `pg_restore` (default: found on PATH). */
  readonly pgDump?: string;
  readonly pgRestore?: string;
}

async function run(
  cmd: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stderr: string }> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd, { args, env, stdin: "null", stdout: "null", stderr: "piped" })
      .output();
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      throw new Error(
        `"${cmd}" was not found: install the PostgreSQL client tools of the server's version (Debian: postgresql-client) or back up the database with its own tooling`,
      );
    }
    throw err;
  }
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr).trim() };
}

/**
 * The `store-backup` task on production: `pg_dump --format=custom` of the store's schema into
 * `folder` as `waf-YYYYMMDD-HHMMSS.dump` (0600), checked with `pg_restore --list`, keeping the
 * newest `keep` copies. The deployment key file is not copied: it must be kept apart (a dump
 * without it cannot open the sealed secrets; with it, the dump is the deployment).
 */
export async function pgDumpBackup(
  pg: ProductionStoreOptions,
  folder: string,
  keep: number,
  now: number,
  deps: PgDumpDeps = {},
): Promise<PgDumpResult> {
  await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
  const { uri, password } = splitPassword(pg.dsn);
  const env: Record<string, string> = {
    PGCONNECT_TIMEOUT: String(Math.max(1, Math.ceil(pg.connectTimeoutMs / 1000))),
    PGAPPNAME: "waf-backup",
  };
  if (password !== undefined) env["PGPASSWORD"] = password;
  let out = `${folder}/${backupName(now, "dump")}`;
  for (let i = 1; await pathExists(out); i++) {
    out = `${folder}/${backupName(now, "dump").replace(/\.dump$/, `-${i}.dump`)}`;
  }
  const dump = await run(deps.pgDump ?? "pg_dump", [
    "--format=custom",
    `--schema=${pg.schema}`,
    "--no-owner",
    `--file=${out}`,
    `--dbname=${uri}`,
  ], env);
  const scrub = (s: string) => s.replaceAll(pg.dsn, redactDsn(pg.dsn));
  if (dump.code !== 0) {
    await Deno.remove(out).catch(() => {});
    throw new Error(`pg_dump failed (exit ${dump.code}): ${scrub(dump.stderr)}`);
  }
  await Deno.chmod(out, 0o600);
  const check = await run(deps.pgRestore ?? "pg_restore", ["--list", out], {});
  if (check.code !== 0) {
    await Deno.remove(out).catch(() => {});
    throw new Error(`The dump failed its check (pg_restore --list): ${check.stderr}`);
  }
  const bytes = (await Deno.stat(out)).size;
  return { path: out, bytes, removed: await rotateBackups(folder, keep) };
}
