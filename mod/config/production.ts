/**
 * The production profile's dependencies as the rest of the code reads them (specification 1.8):
 * the management database of `storage.production.postgresql` and the deployment key file of
 * `storage.production.secrets_file`. What is missing is reported with the key's path, so
 * `waf serve` and `waf config check` name the same key.
 */
import type { Config } from "./config_schema.ts";
import { durationMs } from "../core/duration.ts";
import { maskUrlPassword } from "../core/redact.ts";

/** The production store's connection settings, in the units a client takes. */
export interface ProductionStoreOptions {
  readonly dsn: string;
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
  readonly statementTimeoutMs: number;
  /** The PostgreSQL schema holding the store (default `public`). */
  readonly schema: string;
}

/** A production dependency that is missing or failing (`ErrProductionStorageUnavailable`). */
export interface ProductionProblem {
  /** The configuration key that names the dependency. */
  readonly path: string;
  readonly code: "ErrProductionStorageUnavailable";
  readonly message: string;
}

/** `storage.production.postgresql` in client units; undefined when no DSN is configured. */
export function productionStoreOptions(config: Config): ProductionStoreOptions | undefined {
  const pg = config.storage.production?.postgresql;
  if (!pg) return undefined;
  return {
    dsn: pg.dsn,
    poolSize: pg.pool_size,
    connectTimeoutMs: durationMs(pg.connect_timeout),
    statementTimeoutMs: durationMs(pg.statement_timeout),
    schema: pg.schema,
  };
}

/**
 * A DSN fit for a log line or an answer: the password (userinfo or `password=` parameter)
 * replaced by `***`, user, host, port and database kept.
 */
export function redactDsn(dsn: string): string {
  const masked = maskUrlPassword(dsn);
  if (masked !== "(invalid URL)") return masked;
  // libpq's multi-host form ("postgres://u:p@h1,h2/db") is no WHATWG URL: mask the userinfo.
  return dsn.replace(/^([a-z]+:\/\/[^:/@]*):[^@]*@/i, "$1:***@").replace(
    /([?&]password=)[^&]*/gi,
    "$1***",
  );
}

const MISSING = {
  "storage.production.postgresql.dsn":
    'expected the production management database, e.g. "postgres://waf@db.internal:5432/waf"',
  "storage.production.secrets_file":
    'expected the path of the deployment key file, e.g. "/etc/waf/deployment.key" (the same file on every controller)',
} as const;

/**
 * The production dependencies the configuration does not name (none for `temporary`). Only what
 * the file says; whether the database answers is `probeProductionStore`'s question.
 */
export function missingProductionKeys(config: Config): ProductionProblem[] {
  if (config.storage.profile !== "production") return [];
  const production = config.storage.production;
  const present = {
    "storage.production.postgresql.dsn": production?.postgresql?.dsn !== undefined,
    "storage.production.secrets_file": production?.secrets_file !== undefined,
  };
  return (Object.keys(MISSING) as (keyof typeof MISSING)[])
    .filter((path) => !present[path])
    .map((path) => ({
      path,
      code: "ErrProductionStorageUnavailable",
      message: `${
        MISSING[path]
      }: storage.profile is "production" (ErrProductionStorageUnavailable)`,
    }));
}
