/**
 * The access-log pipeline: the data plane pushes records, which are serialised at once into the
 * rows' text (`mod/access_log/lines.ts`) and queued, bounded (never touching SQLite on the request
 * path); a timer drains the queue in batches to the writer (a writer thread in the server), one
 * string a batch, and hands each batch to the optional sinks. A full queue drops the record and
 * counts it. Every write keeps the table at `maxRecords` (the writer deletes the oldest rows in
 * step); retention deletes records by age (run by the scheduler), and by count what is left.
 */
import type {
  AccessLogFilter,
  AccessLogRepo,
  AccessLogRow,
  StoredAccessLogRow,
} from "../../db/access_log_repo.ts";
import { type AccessLogWriter, directWriter } from "./writer.ts";
import { parseRowLines } from "./lines.ts";
import type { AccessRecord } from "./record.ts";
import { recordLines } from "./record.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";

/**
 * Somewhere else records go (PostgreSQL); `offer` must return at once and never throw. A sink
 * that ships from the store by its own cursor takes `offer` as a wake-up call only.
 */
export interface AccessLogSink {
  offer(rows: readonly AccessLogRow[]): void;
  /**
   * False when `offer` is only a wake-up call (the sink reads the store) or there is nowhere to
   * send rows: the log then keeps no rows for it, which would otherwise wait for a whole batch
   * and outlive the young generation. Absent: the sink takes rows.
   */
  wantsRows?(): boolean;
  stats(): Record<string, unknown>;
  close(): Promise<void>;
}

/**
 * A sink that can be replaced while the pipeline runs (the PostgreSQL sink configured at run
 * time): it forwards to the current one, or to none. A replacement closes the previous sink
 * first (a shipper saves its cursor), so two never ship at once; replacements run in order.
 */
export function createSinkSlot(): AccessLogSink & {
  /** Closes the current sink, then starts `open()`'s (null: none). */
  replace(open: () => AccessLogSink | null): Promise<void>;
} {
  let current: AccessLogSink | null = null;
  let changing: Promise<void> = Promise.resolve();
  let pending = 0;
  return {
    offer(rows) {
      current?.offer(rows);
    },
    wantsRows: () => current !== null && current.wantsRows?.() !== false,
    stats: () => current?.stats() ?? {},
    replace(open) {
      if (pending === 0 && current === null) {
        // Nothing to close: start at once (the pipeline's first sink at composition).
        current = open();
        return changing;
      }
      pending++;
      changing = changing.then(async () => {
        const old = current;
        current = null;
        await old?.close();
        current = open();
      }).finally(() => pending--);
      return changing;
    },
    async close() {
      await changing;
      await current?.close();
      current = null;
    },
  };
}

export interface AccessLogOptions {
  readonly queueSize: number;
  readonly batchSize: number;
  readonly retentionDays: number;
  readonly maxRecords: number;
  /** How often the queue is drained (ms). */
  readonly flushIntervalMs?: number;
}

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
}

export interface AccessLogStats {
  readonly queued: number;
  readonly written: number;
  readonly dropped: number;
  readonly pruned: number;
  /** Times the low-priority writer thread fell behind and was replaced (`createWorkerWriter`). */
  readonly writer_escalations: number;
  /** Times an escalated writer was calm long enough to return to a low-priority thread. */
  readonly writer_deescalations: number;
  readonly sinks: Record<string, unknown>[];
}

const DAY_MS = 86_400_000;
const NO_ROWS: readonly AccessLogRow[] = Object.freeze([]);
/**
 * Records queued before a flush is scheduled ahead of the timer (right after the current turn of
 * the event loop): fewer rows wait in memory, and the writer thread (which holds the timer's
 * batches up to 50 ms or 64 rows to commit them together) gets them in steady portions.
 */
const EARLY_FLUSH_AT = 64;

const NOTHING = () => {};

/**
 * Resolves once both have (rejects as `Promise.all` does), with no value: `writing` is chained
 * through this at every flush, and `Promise.all`'s own value (the pair of values, the first
 * itself the pair before) kept one array per batch ever written alive.
 */
function afterBoth(a: Promise<unknown>, b: Promise<unknown>): Promise<void> {
  return Promise.all([a, b]).then(NOTHING);
}

export function createAccessLog(options: AccessLogOptions, deps: AccessLogDeps) {
  const { repo, clock, logger } = deps;
  const sinks = deps.sinks ?? [];
  /** The queued records, each as its row's two lines of text. */
  let queue: string[] = [];
  let dropped = 0;
  let reportedDropped = 0;
  let written = 0;
  let pruned = 0;
  let flushTimer: ReturnType<typeof setInterval> | undefined;
  let earlyFlush: ReturnType<typeof setImmediate> | undefined;
  const flushEarly = () => {
    earlyFlush = undefined;
    void flush(true, true);
  };
  /** Rows waiting for a full batch before they are offered to the sinks. */
  let sinkRows: AccessLogRow[] = [];
  /** Rows written since the wake-up-only sinks were last woken. */
  let unannounced = 0;

  const writer = deps.writer ?? directWriter(repo);
  /** The last write in flight; writes are chained so they finish in order. */
  let writing: Promise<unknown> = Promise.resolve();
  /**
   * Rows handed to the writer and not answered yet (flushed, or sent by workers through
   * `pushLines`): they count against `queueSize` with the queued ones, so a writer that falls
   * behind (a slow disk) makes the log drop and count records instead of piling up batches.
   */
  let inFlight = 0;

  function reportDrops(): void {
    if (dropped === reportedDropped) return;
    logger.warn("access log records dropped (queue full or batch failed)", {
      dropped_since_last: dropped - reportedDropped,
      dropped_total: dropped,
    });
    reportedDropped = dropped;
  }

  /**
   * Offers the sinks a batch of `count` rows (as text) in batches of `batchSize`; `all`
   * includes a partial batch. Rows are made from the text only for sinks that take rows.
   */
  function offer(lines: string, count: number, all: boolean): void {
    if (sinks.length === 0) return;
    // Sinks that only want a wake-up get one per batch's worth of rows, as before, but no rows
    // are kept for them.
    let keep = false;
    unannounced += count;
    const wake = unannounced >= options.batchSize || (all && unannounced > 0);
    for (const sink of sinks) {
      if (sink.wantsRows?.() !== false) keep = true;
      else if (wake) sink.offer(NO_ROWS);
    }
    if (wake) unannounced = 0;
    if (!keep) {
      sinkRows = [];
      return;
    }
    if (count > 0) { for (const row of parseRowLines(lines)) sinkRows.push(row); }
    while (sinkRows.length >= options.batchSize || (all && sinkRows.length > 0)) {
      const batch = sinkRows.length === options.batchSize
        ? sinkRows
        : sinkRows.slice(0, options.batchSize);
      sinkRows = sinkRows.length === batch.length ? [] : sinkRows.slice(batch.length);
      for (const sink of sinks) if (sink.wantsRows?.() !== false) sink.offer(batch);
    }
  }

  /**
   * Hands everything queued to the writer; resolves once it is in the store. An early flush
   * (`partial`) keeps a partial batch for the sinks until the next one. The timer's flushes
   * `defer`: the writer thread may hold them briefly to commit several at once; an explicit
   * flush (a lookup, a listing, the stop) does not, and takes the deferred ones with it.
   */
  function flush(partial = false, defer = false): Promise<number> {
    if (queue.length === 0) {
      offer("", 0, !partial);
      // Rows sent as text may wait on the writer thread to be committed with the next ones;
      // an explicit flush has them written now.
      if (inFlight > 0 && !defer) {
        writing = afterBoth(writing, writer.writeLines("", { count: 0 }));
      }
      return writing.then(() => 0);
    }
    const taken = queue;
    queue = [];
    const batches: Promise<number>[] = [];
    for (let i = 0; i < taken.length; i += options.batchSize) {
      const part = taken.length <= options.batchSize
        ? taken
        : taken.slice(i, i + options.batchSize);
      // One string a batch: `postMessage` copies it as a block of bytes.
      const lines = part.join("");
      const count = part.length;
      offer(lines, count, !partial && i + options.batchSize >= taken.length);
      inFlight += count;
      batches.push(
        writer.writeLines(lines, { count, defer, keep: options.maxRecords }).then((n) => {
          inFlight -= count;
          written += n;
          return n;
        }, (err) => {
          inFlight -= count;
          // A failed batch is dropped rather than retried forever: the store is local, so a
          // failure here is a full disk or a corrupt file, which retrying does not cure.
          dropped += count;
          logger.error("access log batch failed", { rows: count, error: err as Error });
          return 0;
        }),
      );
    }
    const done = Promise.all(batches).then((counts) => {
      reportDrops();
      return counts.reduce((a, b) => a + b, 0);
    });
    writing = afterBoth(writing, done);
    return done;
  }

  /**
   * Retention runs where the inserts run (the writer thread in the server), never here; the
   * scheduler's `access-log-retention` task calls it.
   */
  async function prune(): Promise<number> {
    return await pruneSlices(clock.now() - options.retentionDays * DAY_MS, options.maxRecords);
  }

  /**
   * Slice by slice, so the batches the data plane hands over meanwhile are written between
   * slices instead of waiting for the whole deletion.
   */
  async function pruneSlices(before: number, keep: number): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await writer.prune(before, keep);
      if (n === 0) break;
      total += n;
      pruned += n;
    }
    return total;
  }

  return {
    /**
     * Queues a record, serialised now (nothing of it is kept: an object held until the flush
     * would outlive the young generation); false (and counted) when `queueSize` rows are queued
     * or with the writer. Never blocks.
     */
    push(record: AccessRecord): boolean {
      deps.observe?.(record);
      if (queue.length + inFlight >= options.queueSize) {
        dropped++;
        return false;
      }
      queue.push(recordLines(record));
      // After this turn's I/O, so a busy loop hands over every record of the turn in one post
      // (each post wakes the writer thread). `setImmediate`, not `setTimeout(0)`: in Deno 2 a
      // `setTimeout` is a Node-style `Timeout` (an object, a timer list, an op re-arming the
      // native timer, a millisecond's wait), which cost ~1 % of the event loop under load.
      if (queue.length === EARLY_FLUSH_AT && flushTimer !== undefined && !earlyFlush) {
        earlyFlush = setImmediate(flushEarly);
      }
      return true;
    },
    /**
     * Rows a data-plane worker serialised (`mod/access_log/lines.ts`), handed to the writer as
     * they are, and the records among them that `observe` must see (blocked, challenged,
     * upstream failures: the worker keeps the others). The rows count against `queueSize`
     * until the writer answers; past it the batch is dropped and counted. The sinks are woken
     * once the rows are stored (the PostgreSQL shipper reads them from the store).
     */
    pushLines(lines: string, count: number, observed: readonly AccessRecord[]): boolean {
      if (deps.observe) { for (const r of observed) deps.observe(r); }
      if (count === 0) return true;
      if (queue.length + inFlight + count > options.queueSize) {
        dropped += count;
        return false;
      }
      inFlight += count;
      const sent = writer.writeLines(lines, { count, defer: true, keep: options.maxRecords });
      const done = sent.then((n) => {
        written += n;
        for (const sink of sinks) sink.offer([]);
        return n;
      }, (err) => {
        dropped += count;
        logger.error("access log batch failed", { rows: count, error: err as Error });
        return 0;
      }).finally(() => {
        inFlight -= count;
        reportDrops();
      });
      writing = afterBoth(writing, done);
      return true;
    },
    /** Writes everything queued now; resolves with the number of rows written. */
    flush: () => flush(),
    prune,
    /** Deletes every record older than `before` (the storage clean-up), in slices. */
    async pruneBefore(before: number): Promise<number> {
      await flush();
      return await pruneSlices(before, Number.MAX_SAFE_INTEGER);
    },
    start(): void {
      flushTimer ??= setInterval(() => void flush(false, true), options.flushIntervalMs ?? 100);
    },
    /** Stops the timers, writes what is queued and closes the sinks. */
    async stop(): Promise<void> {
      clearInterval(flushTimer);
      if (earlyFlush !== undefined) clearImmediate(earlyFlush);
      flushTimer = earlyFlush = undefined;
      await flush();
      // Sinks reading from the store catch up before the writer thread closes.
      for (const sink of sinks) await sink.close();
      await writer.close();
    },
    stats(): AccessLogStats {
      return {
        queued: queue.length + inFlight,
        written,
        dropped,
        // Retention's deletions and those made in step with the writes.
        pruned: pruned + writer.trimmed(),
        writer_escalations: writer.escalations?.() ?? 0,
        writer_deescalations: writer.deescalations?.() ?? 0,
        sinks: sinks.map((s) => s.stats()),
      };
    },
    /** Store queries, after writing what is queued so a fresh trace id is found at once. */
    async list(filter: AccessLogFilter) {
      await flush();
      return repo.list(filter);
    },
    async get(traceId: string) {
      await flush();
      return repo.get(traceId);
    },
    /**
     * Records per action and attack class over a period (default: the last 24 hours), after
     * writing what is queued; `site` is a site's id or name.
     */
    async counts(filter: { from?: number; to?: number; site?: string }) {
      await flush();
      const to = filter.to ?? clock.now();
      const from = filter.from ?? to - DAY_MS;
      const { byAction, byClass } = repo.counts({ from, to, site: filter.site });
      const total = Object.values(byAction).reduce((a, b) => a + b, 0);
      return {
        period: { from: new Date(from).toISOString(), to: new Date(to).toISOString() },
        ...(filter.site === undefined ? {} : { site: filter.site }),
        total,
        by_action: byAction,
        by_class: byClass,
      };
    },
    /** The most hostile client addresses or paths of a period, after writing what is queued. */
    async top(
      by: "client_ip" | "path",
      filter: { from: number; to: number; site?: string },
      limit: number,
    ) {
      await flush();
      return repo.top(by, filter, limit);
    },
    /** The dashboard's figures: `buckets` equal slices of [from, to), and top lists. */
    async summary(range: { from: number; to: number; buckets: number; top: number }) {
      await flush();
      const bucketMs = Math.max(1, Math.ceil((range.to - range.from) / range.buckets));
      const rows = repo.summary(range.from, range.to, bucketMs, range.top);
      const byBucket = new Map(rows.buckets.map((r) => [r.b, r]));
      const series = Array.from({ length: range.buckets }, (_, b) => {
        const r = byBucket.get(b);
        return {
          time: new Date(range.from + b * bucketMs).toISOString(),
          requests: r?.requests ?? 0,
          blocked: r?.blocked ?? 0,
          challenged: r?.challenged ?? 0,
          logged: r?.logged ?? 0,
        };
      });
      const sum = (k: "requests" | "blocked" | "challenged" | "logged") =>
        series.reduce((n, s) => n + s[k], 0);
      return {
        from: new Date(range.from).toISOString(),
        to: new Date(range.to).toISOString(),
        bucket_ms: bucketMs,
        totals: {
          requests: sum("requests"),
          blocked: sum("blocked"),
          challenged: sum("challenged"),
          logged: sum("logged"),
        },
        series,
        blocked_by_class: rows.byClass.map((r) => ({ class: r.key, count: r.count })),
        top_sites: rows.sites.map((r) => ({ site_id: r.key, count: r.count })),
        top_paths: rows.paths.map((r) => ({ path: r.key, count: r.count })),
        top_clients: rows.clients.map((r) => ({ client_ip: r.key, count: r.count })),
      };
    },
  };
}

export type AccessLog = ReturnType<typeof createAccessLog>;
/** A stored record as the access-log service returns it (with its row id). */
export type StoredAccessRecord = StoredAccessLogRow;
