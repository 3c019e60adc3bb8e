/**
 * The access-log pipeline: the data plane pushes records into a bounded in-memory queue (never
 * touching SQLite on the request path); a timer drains it in batches into the store and hands
 * each batch to the optional sinks. A full queue drops the record and counts it. Retention
 * deletes records by age and by count.
 */
import type { AccessLogFilter, AccessLogRepo, AccessLogRow } from "../db/access_log_repo.ts";
import type { AccessRecord } from "./access_record.ts";
import { toRow } from "./access_record.ts";
import type { Clock } from "./clock.ts";
import type { Logger } from "./logger.ts";

/** Somewhere else batches go (PostgreSQL); must return at once and never throw. */
export interface AccessLogSink {
  offer(rows: readonly AccessLogRow[]): void;
  stats(): Record<string, number | boolean>;
  close(): Promise<void>;
}

export interface AccessLogOptions {
  readonly queueSize: number;
  readonly batchSize: number;
  readonly retentionDays: number;
  readonly maxRecords: number;
  /** How often the queue is drained (ms). */
  readonly flushIntervalMs?: number;
  /** How often retention runs (ms). */
  readonly pruneIntervalMs?: number;
}

export interface AccessLogDeps {
  readonly repo: AccessLogRepo;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly sinks?: readonly AccessLogSink[];
}

export interface AccessLogStats {
  readonly queued: number;
  readonly written: number;
  readonly dropped: number;
  readonly pruned: number;
  readonly sinks: Record<string, number | boolean>[];
}

const DAY_MS = 86_400_000;

export function createAccessLog(options: AccessLogOptions, deps: AccessLogDeps) {
  const { repo, clock, logger } = deps;
  const sinks = deps.sinks ?? [];
  let queue: AccessRecord[] = [];
  let dropped = 0;
  let reportedDropped = 0;
  let written = 0;
  let pruned = 0;
  let flushTimer: ReturnType<typeof setInterval> | undefined;
  let pruneTimer: ReturnType<typeof setInterval> | undefined;

  function flush(): number {
    if (queue.length === 0) return 0;
    const taken = queue;
    queue = [];
    let n = 0;
    for (let i = 0; i < taken.length; i += options.batchSize) {
      const rows = taken.slice(i, i + options.batchSize).map(toRow);
      try {
        n += repo.insertBatch(rows);
      } catch (err) {
        // A failed batch is dropped rather than retried forever: the store is local, so a
        // failure here is a full disk or a corrupt file, which retrying does not cure.
        dropped += rows.length;
        logger.error("access log batch failed", { rows: rows.length, error: err as Error });
      }
      for (const sink of sinks) sink.offer(rows);
    }
    written += n;
    if (dropped !== reportedDropped) {
      logger.warn("access log queue overflowed; records dropped", {
        dropped_since_last: dropped - reportedDropped,
        dropped_total: dropped,
      });
      reportedDropped = dropped;
    }
    return n;
  }

  function prune(): number {
    const n = repo.prune(clock.now() - options.retentionDays * DAY_MS, options.maxRecords);
    pruned += n;
    return n;
  }

  return {
    /** Queues a record; false (and counted) when the queue is full. Never blocks. */
    push(record: AccessRecord): boolean {
      if (queue.length >= options.queueSize) {
        dropped++;
        return false;
      }
      queue.push(record);
      return true;
    },
    /** Writes everything queued now; returns the number of rows written. */
    flush,
    prune,
    start(): void {
      flushTimer ??= setInterval(flush, options.flushIntervalMs ?? 250);
      pruneTimer ??= setInterval(() => {
        try {
          prune();
        } catch (err) {
          logger.error("access log retention failed", { error: err as Error });
        }
      }, options.pruneIntervalMs ?? 600_000);
    },
    /** Stops the timers, writes what is queued and closes the sinks. */
    async stop(): Promise<void> {
      clearInterval(flushTimer);
      clearInterval(pruneTimer);
      flushTimer = pruneTimer = undefined;
      flush();
      for (const sink of sinks) await sink.close();
    },
    stats(): AccessLogStats {
      return { queued: queue.length, written, dropped, pruned, sinks: sinks.map((s) => s.stats()) };
    },
    /** Store queries, after writing what is queued so a fresh trace id is found at once. */
    list(filter: AccessLogFilter) {
      flush();
      return repo.list(filter);
    },
    get(traceId: string) {
      flush();
      return repo.get(traceId);
    },
  };
}

export type AccessLog = ReturnType<typeof createAccessLog>;
