/**
 * The production profile's deployment-wide access log: one table in the production database's
 * schema that every controller ships its records into (`deployment_access_logs`), each row
 * carrying the id of the controller that wrote it. The shipper (`mod/access_log/pg_shipper.ts`)
 * writes through {@link createDeploymentLogSink} from its local cursor; the readers are in
 * `access_log_pg_queries.ts`. Besides the SQLite table's columns a row holds what the readers
 * would otherwise compute per row: the chain's last check (the record's class) and the texts a
 * free-text search compares (`searchFields`), so every query is plain SQL.
 */
import type postgres from "postgres";
import type { AccessLogRow } from "./access_log_rows.ts";
import { recordQueryAndAgent, searchFields } from "./access_log_search.ts";
import { openPostgres, type PgSink, pgText } from "./pg_sink.ts";

export const DEPLOYMENT_LOG_TABLE = "deployment_access_logs";

export interface DeploymentLogOptions {
  readonly dsn: string;
  readonly poolSize: number;
  readonly connectTimeoutSeconds?: number;
  /** The server cancels a statement running longer (ms). */
  readonly statementTimeoutMs?: number;
  /** The production database's schema (`storage.production.postgresql.schema`). */
  readonly schema: string;
  /** Told to the server as `application_name`. */
  readonly name: string;
}

/** A pool whose sessions find the deployment's tables (`search_path`) and time out statements. */
export function openDeploymentPool(options: DeploymentLogOptions): postgres.Sql {
  return openPostgres({
    dsn: options.dsn,
    poolSize: options.poolSize,
    connectTimeoutSeconds: options.connectTimeoutSeconds,
    connection: {
      search_path: options.schema,
      application_name: options.name.slice(0, 63),
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    },
  });
}

const T = DEPLOYMENT_LOG_TABLE;
const DDL = [
  `CREATE TABLE IF NOT EXISTS ${T} (
     id BIGSERIAL PRIMARY KEY,
     controller_id TEXT NOT NULL,
     trace_id TEXT NOT NULL UNIQUE,
     time BIGINT NOT NULL,
     site_id TEXT,
     client_ip TEXT,
     method TEXT,
     host TEXT,
     path TEXT,
     status INTEGER,
     action TEXT NOT NULL,
     attack_class TEXT,
     last_check TEXT,
     search_text TEXT NOT NULL,
     record TEXT NOT NULL)`,
  // The period queries and the dashboard (time), a site's or an address's records, and one
  // controller's records (what it shipped, newest first).
  `CREATE INDEX IF NOT EXISTS ${T}_time ON ${T} (time)`,
  `CREATE INDEX IF NOT EXISTS ${T}_site ON ${T} (site_id, time)`,
  `CREATE INDEX IF NOT EXISTS ${T}_client ON ${T} (client_ip, time)`,
  `CREATE INDEX IF NOT EXISTS ${T}_controller ON ${T} (controller_id, id)`,
];

/** Creates the schema (when missing) and the table with its indexes. */
export async function ensureDeploymentLog(sql: postgres.Sql, schema: string): Promise<void> {
  const found = await sql`SELECT 1 FROM pg_namespace WHERE nspname = ${schema}`;
  if (found.length === 0) await sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`;
  for (const ddl of DDL) await sql.unsafe(ddl);
}

/** Separates the texts of `search_text`: no text holds it (see {@link searchKey}). */
const SEPARATOR = "\uffff";

/**
 * A text as `search_text` holds it and a term as it is compared with it: PostgreSQL's text holds
 * no NUL and no lone surrogate (as `pgText` maps them), and U+FFFF separates the texts, so it
 * reads as U+FFFD on both sides: a term never spans two texts.
 */
export function searchKey(s: string): string {
  return pgText(s).replaceAll(SEPARATOR, "\ufffd");
}

/** The chain's last check of a record (the record's class reads it), or null. */
function lastCheck(record: Record<string, unknown>): string | null {
  const chain = record["chain"];
  if (!Array.isArray(chain) || chain.length === 0) return null;
  const check = (chain[chain.length - 1] as { check?: unknown } | null)?.check;
  return typeof check === "string" ? check : null;
}

/** A stored row (its record whole) as the deployment table's row of `controllerId`. */
export function deploymentRow(r: AccessLogRow, controllerId: string) {
  const record = JSON.parse(r.record) as Record<string, unknown>;
  const [query, agent] = recordQueryAndAgent(r.record);
  const fields = searchFields(r.path, r.host, r.client_ip, query, agent);
  return {
    controller_id: controllerId,
    trace_id: r.trace_id,
    time: r.time,
    site_id: pgText(r.site_id),
    client_ip: pgText(r.client_ip),
    method: pgText(r.method),
    host: pgText(r.host),
    path: pgText(r.path),
    status: r.status,
    action: r.action,
    attack_class: pgText(r.attack_class),
    last_check: lastCheck(record),
    search_text: fields.map(searchKey).join(SEPARATOR),
    // JSON text escapes NUL and lone surrogates: the record goes in as the controller stored it.
    record: r.record,
  };
}

/**
 * The shipper's sink for the deployment table: rows of this controller (`controllerId`), a
 * trace id already there skipped (a batch shipped again after a lost answer).
 */
export function createDeploymentLogSink(
  options: DeploymentLogOptions & { readonly controllerId: string },
): PgSink {
  let sql = openDeploymentPool(options);
  return {
    ensureTable: () => ensureDeploymentLog(sql, options.schema),
    async insert(rows) {
      if (rows.length === 0) return;
      const values = rows.map((r) => deploymentRow(r, options.controllerId));
      await sql`INSERT INTO ${sql(T)} ${sql(values)} ON CONFLICT (trace_id) DO NOTHING`;
    },
    async count() {
      const rows = await sql`SELECT COUNT(*)::int AS n FROM ${sql(T)}`;
      return Number(rows[0]?.["n"] ?? 0);
    },
    async drop() {
      await sql`DROP TABLE IF EXISTS ${sql(T)}`;
    },
    async version() {
      const rows = await sql`SELECT version() AS v`;
      return String(rows[0]?.["v"] ?? "");
    },
    async reset() {
      const old = sql;
      sql = openDeploymentPool(options);
      await old.end({ timeout: 0 }).catch(() => {});
    },
    async close() {
      await sql.end({ timeout: 2 });
    },
  };
}

/** Rows one retention statement deletes at most (a short lock, a bounded statement). */
export const DEPLOYMENT_PRUNE_SLICE = 5_000;

/**
 * Retention of the deployment's table: deletes the rows older than `before`, then all but the
 * newest `keep`, in slices of {@link DEPLOYMENT_PRUNE_SLICE} rows (each its own statement, so
 * the shippers' inserts never wait behind one long delete). Returns the rows deleted.
 */
export async function pruneDeploymentLog(
  sql: postgres.Sql,
  before: number,
  keep: number,
  slice = DEPLOYMENT_PRUNE_SLICE,
): Promise<number> {
  let deleted = 0;
  for (;;) {
    const r = await sql`DELETE FROM ${sql(T)} WHERE id IN (
      SELECT id FROM ${sql(T)} WHERE time < ${before} ORDER BY id LIMIT ${slice})`;
    deleted += r.count;
    if (r.count < slice) break;
  }
  if (keep >= Number.MAX_SAFE_INTEGER) return deleted;
  const edge = await sql`SELECT id FROM ${sql(T)} ORDER BY id DESC OFFSET ${keep} LIMIT 1`;
  if (edge.length === 0) return deleted;
  const last = Number(edge[0]!["id"]);
  for (;;) {
    const r = await sql`DELETE FROM ${sql(T)} WHERE id IN (
      SELECT id FROM ${sql(T)} WHERE id <= ${last} ORDER BY id LIMIT ${slice})`;
    deleted += r.count;
    if (r.count < slice) break;
  }
  return deleted;
}
