/**
 * The access log in the production profile: each controller keeps writing its records into its
 * own SQLite file through its queue (a database outage never drops or blocks a request's
 * record), ships them to the production database's deployment-wide table by a persisted cursor
 * of its own (`production`, apart from the optional `storage.postgresql` sink's), and reads the
 * deployment's records there, this controller's own while the database cannot answer.
 */
import {
  createDeploymentLogSink,
  ensureDeploymentLog,
  openDeploymentPool,
  pruneDeploymentLog,
} from "../db/access_log_pg.ts";
import { createPgAccessLogReader } from "../db/access_log_pg_queries.ts";
import type { AccessLogReader } from "../db/access_log_reader.ts";
import type { Config } from "../mod/config/config.ts";
import type { Clock } from "../mod/core/clock.ts";
import { durationMs } from "../mod/core/duration.ts";
import type { Logger } from "../mod/core/logger.ts";
import { deploymentViews, type LogViews } from "../mod/access_log/log_views.ts";
import { createPgShipper, type PgShipperStats } from "../mod/access_log/pg_shipper.ts";
import type { AccessLogSink } from "../mod/access_log/sinks.ts";
import type { ShipSource } from "../mod/access_log/writer.ts";

/** The shipping cursor's name in the local store. */
export const PRODUCTION_CURSOR = "production";
/** Connections of the reader's pool at most (the store has a pool of its own). */
const READER_POOL = 4;

export interface ProductionLogDatabase {
  readonly dsn: string;
  readonly schema: string;
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
  readonly statementTimeoutMs: number;
}

/**
 * `storage.production.postgresql` when the production profile is chosen, else undefined.
 * (`productionStoreOptions` of mod/config gives the same values once it lands.)
 */
export function productionLogDatabase(config: Config): ProductionLogDatabase | undefined {
  const pg = config.storage.profile === "production"
    ? config.storage.production?.postgresql
    : undefined;
  if (!pg) return undefined;
  return {
    dsn: pg.dsn,
    schema: pg.schema,
    poolSize: pg.pool_size,
    connectTimeoutMs: durationMs(pg.connect_timeout),
    statementTimeoutMs: durationMs(pg.statement_timeout),
  };
}

export interface ProductionLogDeps {
  readonly database: ProductionLogDatabase;
  /** This controller's id: every record it ships carries it. */
  readonly controllerId: string;
  /** The local store's rows after the cursor (the writer thread). */
  readonly source: ShipSource;
  /** This controller's records (the fallback). */
  readonly local: AccessLogReader;
  /** The site ids a site name stands for. */
  readonly siteIds: (site: string) => readonly string[];
  readonly batchSize: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Shorter waits for tests: the reads' retry after a failure, the shipper's back-off and poll. */
  readonly tuning?: {
    readonly retryMs?: number;
    readonly minBackoffMs?: number;
    readonly maxBackoffMs?: number;
    readonly idlePollMs?: number;
  };
}

/**
 * The production shipper's health among the access log's `sinks`: the sink's fields, marked
 * `production` (not `postgresql`, which names the optional `storage.postgresql` sink).
 */
export type ProductionShipStats = Omit<PgShipperStats, "postgresql"> & {
  readonly production: true;
};

/** The production access log's parts: its shipper, its views and the deployment's retention. */
export interface ProductionAccessLog {
  readonly sink: Omit<AccessLogSink, "stats"> & { stats(): ProductionShipStats };
  readonly views: LogViews;
  /**
   * Retention of the deployment's table: the rows older than `before`, then all but the newest
   * `keep` (every controller's records together). Returns the rows deleted.
   */
  prune(before: number, keep: number): Promise<number>;
}

/** The shipper to the deployment's table and the views that read it. */
export function productionAccessLog(deps: ProductionLogDeps): ProductionAccessLog {
  const db = deps.database;
  const connectTimeoutSeconds = Math.max(1, Math.ceil(db.connectTimeoutMs / 1000));
  const common = {
    dsn: db.dsn,
    schema: db.schema,
    connectTimeoutSeconds,
    statementTimeoutMs: db.statementTimeoutMs,
  };
  const shipper = createPgShipper(
    createDeploymentLogSink({
      ...common,
      poolSize: 1,
      controllerId: deps.controllerId,
      name: `waf-access-log ${deps.controllerId}`,
    }),
    deps.source,
    {
      batchSize: deps.batchSize,
      insertTimeoutMs: db.statementTimeoutMs,
      cursorName: PRODUCTION_CURSOR,
      minBackoffMs: deps.tuning?.minBackoffMs,
      maxBackoffMs: deps.tuning?.maxBackoffMs,
      idlePollMs: deps.tuning?.idlePollMs,
    },
    { logger: deps.logger, clock: deps.clock },
  );
  const sink = {
    offer: (rows: Parameters<AccessLogSink["offer"]>[0]) => shipper.offer(rows),
    wantsRows: () => shipper.wantsRows?.() !== false,
    close: () => shipper.close(),
    stats: (): ProductionShipStats => {
      const { postgresql: _, ...stats } = shipper.stats() as PgShipperStats;
      return { production: true, ...stats };
    },
  };
  const open = () =>
    openDeploymentPool({
      ...common,
      poolSize: Math.min(READER_POOL, db.poolSize),
      name: `waf-access-log-reader ${deps.controllerId}`,
    });
  let sql = open();
  let reader = createPgAccessLogReader(sql, { siteIds: deps.siteIds });
  // The table is made by the first read or the first shipped batch, whichever comes first (a
  // deployment whose controllers have shipped nothing yet answers empty, not "unreachable").
  let made: Promise<void> | undefined;
  const ready = () =>
    made ??= ensureDeploymentLog(sql, db.schema).catch((err) => {
      made = undefined;
      throw err;
    });
  // The reader behind the views is replaced with its pool after a stalled read.
  const current: AccessLogReader = {
    page: async (f) => (await ready(), reader.page(f)),
    get: async (id) => (await ready(), reader.get(id)),
    counts: async (f) => (await ready(), reader.counts(f)),
    top: async (by, f, limit) => (await ready(), reader.top(by, f, limit)),
    summary: async (
      from,
      to,
      bucket,
      limit,
    ) => (await ready(), reader.summary(from, to, bucket, limit)),
  };
  const views = deploymentViews({
    deployment: current,
    local: deps.local,
    clock: deps.clock,
    logger: deps.logger,
    // The server cancels a statement at its timeout; a connection that never answers is cut here.
    timeoutMs: db.statementTimeoutMs + 1_000,
    retryMs: deps.tuning?.retryMs,
    async reset() {
      const old = sql;
      sql = open();
      reader = createPgAccessLogReader(sql, { siteIds: deps.siteIds });
      await old.end({ timeout: 0 }).catch(() => {});
    },
    close: () => sql.end({ timeout: 2 }),
  });
  return {
    sink,
    views,
    prune: async (before, keep) => (await ready(), await pruneDeploymentLog(sql, before, keep)),
  };
}
