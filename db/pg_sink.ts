/**
 * The one wrapper around `postgres` (porsager/postgres): writes access-log batches into a
 * PostgreSQL table, creating it when missing. Retrying, the cursor and timeouts live in
 * `mod/access_log/pg_shipper.ts`; this file only talks SQL. `reset()` drops every connection
 * (a stalled one never errors by itself) and starts a fresh pool.
 */
import postgres from "postgres";
import { reconnectBackoff } from "./pg/backoff.ts";
import type { AccessLogRow } from "./access_log_rows.ts";

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

/**
 * A text value as PostgreSQL takes it: its text and jsonb hold no NUL (a refused request's raw
 * target can), and jsonb refuses a lone surrogate (evidence cut at its limit inside a pair). A
 * NUL becomes U+2400 (the symbol for NUL), a lone surrogate U+FFFD; one such row refused would
 * fail its whole batch, and the shipper retries a batch from its cursor for ever.
 */
export function pgText<T extends string | null>(s: T): T {
  if (s === null || (s.indexOf("\0") < 0 && s.isWellFormed())) return s;
  return s.replaceAll("\0", "\u2400").toWellFormed() as T;
}

/** Every string of a parsed JSON value through {@link pgText}. */
function pgValue(v: unknown): unknown {
  if (typeof v === "string") return pgText(v);
  if (Array.isArray(v)) return v.map(pgValue);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[pgText(k)] = pgValue(x);
    return out;
  }
  return v;
}

/** What JSON.stringify writes for a NUL or a lone surrogate (pairs it writes as they are). */
const PG_UNSAFE_ESCAPE = /\\u0000|\\ud[89a-f]/i;

/**
 * The record as the jsonb column's value: the parsed object (the driver serialises a jsonb
 * parameter with `JSON.stringify`, so the record's text itself would be stored as one JSON
 * string), its strings made acceptable when the text shows they need it.
 */
export function pgRecord(text: string): postgres.JSONValue {
  const value = JSON.parse(text);
  return (PG_UNSAFE_ESCAPE.test(text) ? pgValue(value) : value) as postgres.JSONValue;
}

/**
 * A pool for a DSN the driver could not parse: every use fails with `err`, closing succeeds.
 * The driver's parse error quotes the whole DSN, password included (`Invalid URL: 'postgres://
 * user:password@...'`), and thrown from the constructor it reached the log unmasked (as an
 * unhandled rejection from the sink's start in a running server).
 */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi;

function unopened(err: Error): postgres.Sql {
  const fail = () => {
    throw err;
  };
  return new Proxy(fail, {
    get: (_target, key) => key === "end" ? () => Promise.resolve() : fail,
  }) as unknown as postgres.Sql;
}

/** What {@link openPostgres} connects with. */
export interface PostgresOptions {
  readonly dsn: string;
  readonly poolSize: number;
  /** Seconds to wait for a connection before a query fails. */
  readonly connectTimeoutSeconds?: number;
  /** Session settings (`search_path`, `statement_timeout`, `application_name`). */
  readonly connection?: Record<string, string | number>;
}

/**
 * A `postgres` pool as the access log uses one (no array-types query, notices ignored); a DSN
 * the driver cannot parse gives a pool whose every use fails, its password masked.
 */
export function openPostgres(options: PostgresOptions): postgres.Sql {
  try {
    return postgres(options.dsn, {
      max: options.poolSize,
      connect_timeout: options.connectTimeoutSeconds ?? 5,
      idle_timeout: 60,
      backoff: reconnectBackoff,
      // The driver's own array-types query (sent on each new connection before the caller's)
      // runs in a promise nobody observes: a connection lost during it and then refused on
      // reconnect rejected it unhandled (`connect ECONNREFUSED`), which ends a Deno process.
      // The access log sends no arrays, so the query is not needed.
      fetch_types: false,
      onnotice: () => {},
      ...(options.connection ? { connection: options.connection } : {}),
    });
  } catch (err) {
    // The DSN shown with its user and password masked; whole, when they cannot be told apart.
    const shown = options.dsn.replace(USERINFO, "$1[masked]@");
    const safe = shown === options.dsn && options.dsn.includes("@") ? "[masked]" : shown;
    const message = (err instanceof Error ? err.message : String(err))
      .replaceAll(options.dsn, safe).replace(USERINFO, "$1[masked]@");
    return unopened(new Error(`invalid PostgreSQL DSN: ${message}`));
  }
}

export function createPgSink(options: PgSinkOptions): PgSink {
  const open = () => openPostgres(options);
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
      const values = rows.map((r) => {
        const record = pgRecord(r.record);
        // The store's text columns cut a value at a NUL: the record holds it whole.
        const text = (k: "site_id" | "client_ip" | "method" | "host" | "path") => {
          const v = (record as Record<string, unknown> | null)?.[k];
          return typeof v === "string" ? v : pgText(r[k]);
        };
        return {
          trace_id: r.trace_id,
          time: new Date(r.time),
          site_id: text("site_id"),
          client_ip: text("client_ip"),
          method: text("method"),
          host: text("host"),
          path: text("path"),
          status: r.status,
          action: r.action,
          attack_class: r.attack_class,
          record: sql.json(record),
        };
      });
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
