/**
 * The access log: the write queue the data plane pushes records into (`write_queue.ts`: serialised
 * at once, bounded, drained in batches to the writer and the sinks), and the queries over the
 * store (`queries.ts`), which write what is queued first. Retention deletes records by age (run
 * by the scheduler), and by count what is left.
 *
 * @example
 * ```ts
 * const log = createAccessLog(
 *   { queueSize: 10_000, batchSize: 500, retentionDays: 30, maxRecords: 1_000_000 },
 *   { repo: createAccessLogRepo(db, lineFormat), writer, clock, logger },
 * );
 * log.start();
 * log.push(record); // on the request path: never blocks, never touches SQLite
 * log.stats().sampled_sites; // passed records left out while the writer was behind, per site
 * log.stats().dropped_sites; // records lost for good, per site and action (verdicts: never, short of a full disk)
 * const row = await log.get(record.trace_id); // written first, so found at once
 * await log.stop();
 * ```
 */
import type { AccessLogRepo } from "../../db/access_log_repo.ts";
import type { StoredAccessLogRow } from "../../db/access_log_rows.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { sqliteAccessLogReader } from "../../db/access_log_reader.ts";
import { type DeploymentReadStats, localViews, type LogViews } from "./log_views.ts";
import { createAccessLogQueries } from "./queries.ts";
import type { AccessRecord } from "./record.ts";
import { type AccessLogSink, SinkFeed } from "./sinks.ts";
import {
  type AccessLogOptions,
  type RowBatch,
  WriteQueue,
  type WriteQueueStats,
} from "./write_queue.ts";
import { type AccessLogWriter, directWriter } from "./writer.ts";

export interface AccessLogDeps {
  /** Queries (on the caller's connection). */
  readonly repo: AccessLogRepo;
  /** Inserts and retention; defaults to writing through `repo` on this thread. */
  readonly writer?: AccessLogWriter;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly sinks?: readonly AccessLogSink[];
  /** Sees every record as the data plane hands it over (the runtime log's events). */
  readonly observe?: (record: AccessRecord) => void;
  /**
   * Which records the queries read: given in the production profile (the deployment's, this
   * controller's while the database cannot answer); default this controller's, through `repo`.
   */
  readonly views?: LogViews;
}

export interface AccessLogStats extends WriteQueueStats {
  readonly sinks: Record<string, unknown>[];
  /** The production profile's reads of the deployment's records. */
  readonly deployment_reads?: DeploymentReadStats;
}

export function createAccessLog(options: AccessLogOptions, deps: AccessLogDeps) {
  const views = deps.views ?? localViews(sqliteAccessLogReader(deps.repo));
  const sinks = new SinkFeed(deps.sinks ?? [], options.batchSize);
  const queue = new WriteQueue(options, {
    writer: deps.writer ?? directWriter(deps.repo),
    clock: deps.clock,
    logger: deps.logger,
    sinks,
    observe: deps.observe,
  });
  return {
    /** Queues a record (see `WriteQueue.push`); false (and counted) when it was left out. */
    push: (record: AccessRecord): boolean => queue.push(record),
    /** Rows a data-plane worker serialised, and the records `observe` must see. */
    pushRows: (batch: RowBatch): boolean => queue.pushRows(batch),
    /** Writes everything queued now; resolves with the number of rows written. */
    flush: (): Promise<number> => queue.flush(),
    /** One retention pass: by age, then all but the newest `maxRecords`. */
    prune: (): Promise<number> => queue.prune(),
    /** Deletes every record older than `before` (the storage clean-up), in slices. */
    pruneBefore: (before: number): Promise<number> => queue.pruneBefore(before),
    start: (): void => queue.start(),
    /** Resolves once the spill file is open (`spillPath`; at once without one). */
    opened: (): Promise<void> => queue.opened,
    /** Stops the timers, writes what is queued and closes the sinks. */
    stop: async (): Promise<void> => {
      await queue.stop();
      await views.close();
    },
    stats: (): AccessLogStats => {
      const reads = views.stats();
      return {
        ...queue.stats(),
        sinks: sinks.stats(),
        ...(reads === null ? {} : { deployment_reads: reads }),
      };
    },
    ...createAccessLogQueries({
      repo: deps.repo,
      views,
      clock: deps.clock,
      flush: () => queue.flush(),
    }),
  };
}

export type AccessLog = ReturnType<typeof createAccessLog>;
/** A stored record as the access-log service returns it (with its row id). */
export type StoredAccessRecord = StoredAccessLogRow;
