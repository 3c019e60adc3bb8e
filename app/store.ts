/**
 * The management store a composition opens: the embedded SQLite file on the `temporary` profile;
 * on `production` the PostgreSQL store of `storage.production.postgresql`, with each controller's
 * access log kept locally in a SQLite file of its own (shipped to the database from there, so a
 * database outage never drops or blocks a request's record).
 */
import type { Config } from "../mod/config/config.ts";
import { durationMs } from "../mod/core/duration.ts";
import { openPgStore } from "../db/pg/pg_database.ts";
import { type Db, openStore, type SqliteDb } from "../db/store.ts";

export interface ManagementStore {
  /** Users, sessions, policy, audit, ...: every controller's shared state. */
  readonly db: Db;
  /** This controller's access log (on `temporary` the same database as `db`). */
  readonly logDb: SqliteDb;
  /** The access log's file, which its writer thread opens on a connection of its own. */
  readonly logPath: string;
}

/** The PostgreSQL store `config` names, when its profile is `production`. */
export function productionPg(config: Config) {
  return config.storage.profile === "production"
    ? config.storage.production?.postgresql
    : undefined;
}

/**
 * The management database alone (no access-log file), as the operator commands open it: the
 * SQLite file on `temporary`, the PostgreSQL store on `production`. Both are migrated.
 */
export function openManagementDb(
  config: Config,
  dataDir: string,
  options: { readonly now: number; readonly controllerId: string },
): Db {
  const pg = productionPg(config);
  if (!pg) return openStore(`${dataDir}/waf.db`, { now: options.now });
  return openPgStore({
    dsn: pg.dsn,
    schema: pg.schema,
    connectTimeoutMs: durationMs(pg.connect_timeout),
    statementTimeoutMs: durationMs(pg.statement_timeout),
    controllerId: options.controllerId,
    now: options.now,
  });
}

/** Opens the store `config` names; `controllerId` marks this process's change notices. */
/** The local SQLite file that holds this controller's access log (`waf.db` on `temporary`). */
export function accessLogPath(config: Config, dataDir: string): string {
  return productionPg(config) ? `${dataDir}/access_log.db` : `${dataDir}/waf.db`;
}

export function openManagementStore(
  config: Config,
  dataDir: string,
  options: { readonly now: number; readonly controllerId: string },
): ManagementStore {
  const logPath = accessLogPath(config, dataDir);
  if (!productionPg(config)) {
    const db = openStore(logPath, { now: options.now });
    return { db, logDb: db, logPath };
  }
  const db = openManagementDb(config, dataDir, options);
  try {
    return { db, logDb: openStore(logPath, { now: options.now }), logPath };
  } catch (err) {
    db.close();
    throw err;
  }
}
