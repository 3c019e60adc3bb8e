/**
 * The one wrapper around `postgres` (porsager/postgres): writes access-log batches into a
 * PostgreSQL table, creating it when missing. Retrying, the cursor and timeouts live in
 * `mod/data_plane/pg_shipper.ts`; this file only talks SQL. `reset()` drops every connection
 * (a stalled one never errors by itself) and starts a fresh pool.
 */
import postgres from "postgres";
import type { AccessLogRow } from "./access_log_repo.ts";

export interface PgSink {
  /** Creates the table and its indexes when missing. */
  ensureTable(): Promise<void>;
  /** Inserts one batch in one statement; rows whose trace id exists are skipped. */
  insert(rows: readonly AccessLogRow[]): Promise<void>;
  /** Rows in the table (diagnostics and tests). */
  count(): Promise<number>;
  /** Drops the table (tests clean up their own). */
  drop(): Promise<void>;
  /** `SELECT version()`: the connectivity check. */
  version(): Promise<string>;
  /** Ends every connection at once (pending queries fail) and opens a new pool. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

export interface PgSinkOptions {
  readonly dsn: string;
  readonly poolSize: number;
  /** Seconds to wait for a connection before a send fails. */
  readonly connectTimeoutSeconds?: number;
  /** Table name (tests use their own). */
  readonly table?: string;
}

export const PG_TABLE = "waf_access_logs";

export function createPgSink(options: PgSinkOptions): PgSink {
  const open = () =>
    postgres(options.dsn, {
      max: options.poolSize,
      connect_timeout: options.connectTimeoutSeconds ?? 5,
      idle_timeout: 60,
      onnotice: () => {},
    });
  let sql = open();
  const table = options.table ?? PG_TABLE;
  return {
    async ensureTable() {
      await sql`
        CREATE TABLE IF NOT EXISTS ${sql(table)} (
          id BIGSERIAL PRIMARY KEY,
          trace_id TEXT NOT NULL UNIQUE,
          time TIMESTAMPTZ NOT NULL,
          site_id TEXT,
          client_ip TEXT,
          method TEXT,
          host TEXT,
          path TEXT,
          status INTEGER,
          action TEXT NOT NULL,
          attack_class TEXT,
          record JSONB NOT NULL
        )`;
      await sql`CREATE INDEX IF NOT EXISTS ${sql(table + "_time")} ON ${sql(table)} (time)`;
    },
    async insert(rows) {
      if (rows.length === 0) return;
      const values = rows.map((r) => ({
        trace_id: r.trace_id,
        time: new Date(r.time),
        site_id: r.site_id,
        client_ip: r.client_ip,
        method: r.method,
        host: r.host,
        path: r.path,
        status: r.status,
        action: r.action,
        attack_class: r.attack_class,
        record: r.record,
      }));
      await sql`
        INSERT INTO ${sql(table)} ${sql(values)}
        ON CONFLICT (trace_id) DO NOTHING`;
    },
    async count() {
      const rows = await sql`SELECT COUNT(*)::int AS n FROM ${sql(table)}`;
      return Number(rows[0]?.["n"] ?? 0);
    },
    async drop() {
      await sql`DROP TABLE IF EXISTS ${sql(table)}`;
    },
    async version() {
      const rows = await sql`SELECT version() AS v`;
      return String(rows[0]?.["v"] ?? "");
    },
    async reset() {
      const old = sql;
      sql = open();
      await old.end({ timeout: 0 }).catch(() => {});
    },
    async close() {
      await sql.end({ timeout: 2 });
    },
  };
}
