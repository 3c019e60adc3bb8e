/**
 * The access log's write queue: the data plane pushes records, which are serialised at once into
 * the rows' text (`lines.ts`) and queued, bounded (never touching SQLite on the request path); a
 * timer drains the queue in batches to the writer (a writer thread in the server), one string a
 * batch, and hands each batch to the sinks. When the writer falls behind, passed requests'
 * records are sampled and counted per site while verdicts (blocked, challenged, logged) are still
 * taken (`admission.ts`); verdicts past the in-memory ceiling, and batches the writer refused,
 * go to the spill file (`spill.ts`) and are written from it once the writer has caught up
 * (`spill_drain.ts`). Only what even the spill file cannot take is lost, counted by site and
 * action. Every write keeps the table at `maxRecords` (the writer deletes the oldest rows in
 * step); retention deletes records by age, and by count what is left.
 */
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { Admission, DropCounts, isVerdict, sampleKey } from "./admission.ts";
import { tallyRows } from "./lines.ts";
import { OverloadReport } from "./overload_report.ts";
import type { AccessRecord } from "./record.ts";
import { recordLines } from "./record.ts";
import type { SinkFeed } from "./sinks.ts";
import { SpillFile } from "./spill.ts";
import { SpillDrain } from "./spill_drain.ts";
import type { AccessLogWriter } from "./writer.ts";

export interface AccessLogOptions {
  readonly queueSize: number;
  readonly batchSize: number;
  readonly retentionDays: number;
  readonly maxRecords: number;
  /** How often the queue is drained (ms). */
  readonly flushIntervalMs?: number;
  /**
   * The spill file (beside the store in the server): rows that must not be lost and do not fit
   * in memory go there. Without it (tests, tools) they are dropped and counted.
   */
  readonly spillPath?: string;
  /** The spill file's size limit (bytes; default {@link SPILL_MAX_BYTES}). */
  readonly spillMaxBytes?: number;
}

/** The spill file's default size limit: about half a million rows. */
export const SPILL_MAX_BYTES = 256 * 1024 * 1024;

export interface WriteQueueDeps {
  readonly writer: AccessLogWriter;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly sinks: SinkFeed;
  /** Sees every record as the data plane hands it over (the runtime log's events). */
  readonly observe?: (record: AccessRecord) => void;
}

/**
 * Rows a data-plane worker serialised (`lines.ts`): the verdicts' rows apart from the passed
 * requests' rows, so the queue can sample the second kind alone.
 */
export interface RowBatch {
  /** Rows of blocked, challenged and logged requests (never sampled). */
  readonly lines: string;
  readonly count: number;
  /** Rows of passed requests. */
  readonly passLines: string;
  readonly passCount: number;
  /** The passed rows by site name (`""`: no site matched), to count them when sampled. */
  readonly passSites: readonly (readonly [string, number])[];
  /** The records `observe` must see (blocked, challenged, upstream failures). */
  readonly observed: readonly AccessRecord[];
}

export interface WriteQueueStats {
  readonly queued: number;
  readonly written: number;
  /**
   * Records lost for good: what the spill file could not take (full, failing, or none
   * configured) and spilled rows the writer kept refusing.
   */
  readonly dropped: number;
  /** Of `dropped`, records of blocked, challenged or logged requests (the target: 0). */
  readonly dropped_verdicts: number;
  /** `dropped` by site name (`""`: no site matched) and action (`pass`, `block`, ...). */
  readonly dropped_sites: Record<string, Record<string, number>>;
  /** Passed requests' records left out while the writer was behind (sampled). */
  readonly sampled: number;
  /** `sampled` by site name (`""`: requests no site matched). */
  readonly sampled_sites: Record<string, number>;
  /**
   * The passed records' sampling now: one in this many kept (1: all, 0: none, the backlog past
   * `queue_size`).
   */
  readonly sample_every: number;
  /** Rows ever written to the spill file (verdicts past the ceiling, refused batches). */
  readonly spilled: number;
  /** Rows in the spill file waiting to be written to the store, and their bytes. */
  readonly spill_rows: number;
  readonly spill_bytes: number;
  readonly pruned: number;
  /** Times the low-priority writer thread fell behind and was replaced (`createWorkerWriter`). */
  readonly writer_escalations: number;
  /** Times an escalated writer was calm long enough to return to a low-priority thread. */
  readonly writer_deescalations: number;
}

const DAY_MS = 86_400_000;
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

export class WriteQueue {
  readonly #o: AccessLogOptions;
  readonly #writer: AccessLogWriter;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #sinks: SinkFeed;
  readonly #observe: ((record: AccessRecord) => void) | undefined;
  /** The queued records, each as its row's two lines of text. */
  #queue: string[] = [];
  readonly #drops = new DropCounts();
  readonly #report: OverloadReport;
  readonly #spill: SpillFile | undefined;
  readonly #drain: SpillDrain | undefined;
  readonly #admission: Admission;
  /** Rows held (queued and with the writer) below which everything is taken at once. */
  readonly #open: number;
  #written = 0;
  #pruned = 0;
  #flushTimer: ReturnType<typeof setInterval> | undefined;
  #earlyFlush: ReturnType<typeof setImmediate> | undefined;
  readonly #flushEarly = () => {
    this.#earlyFlush = undefined;
    void this.flush(true, true);
  };
  /** The last write in flight; writes are chained so they finish in order. */
  #writing: Promise<unknown> = Promise.resolve();
  /**
   * Rows handed to the writer and not answered yet (flushed, or sent by workers through
   * `pushRows`): they count against `queueSize` with the queued ones, so a writer that falls
   * behind (a slow disk) makes the log drop and count records instead of piling up batches.
   */
  #inFlight = 0;

  constructor(options: AccessLogOptions, deps: WriteQueueDeps) {
    this.#o = options;
    this.#writer = deps.writer;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#sinks = deps.sinks;
    this.#observe = deps.observe;
    this.#admission = new Admission(options.queueSize);
    this.#open = this.#admission.highWater;
    this.#report = new OverloadReport(deps.clock, deps.logger);
    if (options.spillPath !== undefined) {
      const spill = new SpillFile(options.spillPath, {
        maxBytes: options.spillMaxBytes ?? SPILL_MAX_BYTES,
        onLost: (lines, count, error) => {
          this.#lose(lines);
          this.#logger.error("access log spill file append failed", { rows: count, error });
        },
      });
      this.#spill = spill;
      this.#drain = new SpillDrain(spill, {
        writer: this.#writer,
        clock: deps.clock,
        logger: deps.logger,
        keep: options.maxRecords,
        idle: () => this.#queue.length + this.#inFlight < this.#open,
        sending: (n) => this.#inFlight += n,
        written: (n) => {
          this.#written += n;
          this.#sinks.wake();
        },
        lost: (lines) => this.#lose(lines),
      });
    }
    this.opened = this.#openSpill();
  }

  /** Resolves once the spill file is open (at once without one). */
  readonly opened: Promise<void>;

  /**
   * Queues a record, serialised now (nothing of it is kept: an object held until the flush
   * would outlive the young generation). Past the high-water mark a passed request's record
   * may be left out (false, counted for its site); a verdict past the ceiling goes to the spill
   * file (still true), and only when that is full is it lost (false, counted). Never blocks.
   */
  push(record: AccessRecord): boolean {
    this.#observe?.(record);
    const queue = this.#queue;
    const held = queue.length + this.#inFlight;
    if (held >= this.#open && !this.#admit(record, held)) {
      return isVerdict(record) && this.#overflow(recordLines(record), 1, record);
    }
    queue.push(recordLines(record));
    // After this turn's I/O, so a busy loop hands over every record of the turn in one post
    // (each post wakes the writer thread). `setImmediate`, not `setTimeout(0)`: in Deno 2 a
    // `setTimeout` is a Node-style `Timeout` (an object, a timer list, an op re-arming the
    // native timer, a millisecond's wait), costly per flush
    // (docs/bench/2026-11-26-cpu-against-bare-proxy.md, "The early flush's timer, taken out").
    if (queue.length === EARLY_FLUSH_AT && this.#flushTimer !== undefined && !this.#earlyFlush) {
      this.#earlyFlush = setImmediate(this.#flushEarly);
    }
    return true;
  }

  /**
   * Rows a data-plane worker serialised, handed to the writer as they are (the verdicts first,
   * then the passed ones, when they are taken), and the records among them that `observe` must
   * see (the worker keeps the others). The rows count against the queue until the writer
   * answers. The sinks are woken once the rows are stored (the PostgreSQL shipper reads them
   * from the store). False when any row was left out (counted as for `push`).
   */
  pushRows(batch: RowBatch): boolean {
    if (this.#observe) { for (const r of batch.observed) this.#observe(r); }
    const admission = this.#admission;
    let held = this.#queue.length + this.#inFlight;
    let lines = "";
    let count = 0;
    let whole = true;
    if (batch.count > 0) {
      if (admission.verdict(held, batch.count)) {
        lines = batch.lines;
        count = batch.count;
        held += count;
      } else if (!this.#overflow(batch.lines, batch.count)) {
        whole = false;
      }
    }
    if (batch.passCount > 0) {
      if (admission.passed(held, batch.passCount)) {
        lines += batch.passLines;
        count += batch.passCount;
      } else {
        for (const [site, n] of batch.passSites) admission.sample(site, n);
        whole = false;
      }
    }
    if (count > 0) this.#send(lines, count);
    this.#reportDrops();
    return whole;
  }

  /**
   * Verdict rows that do not fit in memory: to the spill file, or (full, failing, none) lost
   * and counted by site and action (`record` when it is one record, else parsed from `lines`).
   */
  #overflow(lines: string, count: number, record?: AccessRecord): boolean {
    if (this.#spill?.add(lines, count)) return true;
    if (record) this.#drops.add(sampleKey(record.site), record.action, 1);
    else this.#lose(lines);
    return false;
  }

  /** A batch the writer refused: to the spill file to be written again, or lost. */
  #refused(lines: string, count: number, err: unknown): void {
    const spilled = this.#spill?.add(lines, count) ?? false;
    if (!spilled) this.#lose(lines);
    this.#logger.error("access log batch failed", { rows: count, spilled, error: err as Error });
  }

  /** Rows lost for good, counted by site and action. */
  #lose(lines: string): void {
    for (const [site, action, n] of tallyRows(lines)) this.#drops.add(site, action, n);
  }

  /** The taken rows of a worker's batch to the writer, counted until it answers. */
  #send(lines: string, count: number): void {
    const bulk = this.#inFlight >= this.#open;
    this.#inFlight += count;
    const sent = this.#writer.writeLines(lines, {
      count,
      defer: true,
      bulk,
      keep: this.#o.maxRecords,
    });
    const done = sent.then((n) => {
      this.#written += n;
      this.#sinks.wake();
      return n;
    }, (err) => {
      this.#refused(lines, count, err);
      return 0;
    }).finally(() => {
      this.#inFlight -= count;
      this.#reportDrops();
    });
    this.#writing = afterBoth(this.#writing, done);
  }

  /**
   * Above the high-water mark: whether `record` is queued in memory; a passed one not queued
   * is counted as sampled (a verdict not queued goes on to `#overflow`).
   */
  #admit(record: AccessRecord, held: number): boolean {
    if (isVerdict(record)) return this.#admission.verdict(held, 1);
    if (this.#admission.passed(held, 1)) return true;
    this.#admission.sample(sampleKey(record.site), 1);
    return false;
  }

  /**
   * Hands everything queued to the writer; resolves once it is in the store. An early flush
   * (`partial`) keeps a partial batch for the sinks until the next one. The timer's flushes
   * `defer`: the writer thread may hold them briefly to commit several at once; an explicit
   * flush (a lookup, a listing, the stop) does not, and takes the deferred ones with it.
   */
  flush(partial = false, defer = false): Promise<number> {
    this.#drain?.kick();
    if (this.#queue.length === 0) {
      this.#sinks.offer("", 0, !partial);
      // Rows sent as text may wait on the writer thread to be committed with the next ones;
      // an explicit flush has them written now.
      if (this.#inFlight > 0 && !defer) {
        this.#writing = afterBoth(this.#writing, this.#writer.writeLines("", { count: 0 }));
      }
      return this.#writing.then(() => 0);
    }
    const taken = this.#queue;
    this.#queue = [];
    const size = this.#o.batchSize;
    const batches: Promise<number>[] = [];
    for (let i = 0; i < taken.length; i += size) {
      const part = taken.length <= size ? taken : taken.slice(i, i + size);
      // One string a batch: `postMessage` copies it as a block of bytes.
      const lines = part.join("");
      this.#sinks.offer(lines, part.length, !partial && i + size >= taken.length);
      batches.push(this.#write(lines, part.length, defer));
    }
    const done = Promise.all(batches).then((counts) => {
      this.#reportDrops();
      return counts.reduce((a, b) => a + b, 0);
    });
    this.#writing = afterBoth(this.#writing, done);
    return done;
  }

  /**
   * Retention runs where the inserts run (the writer thread in the server), never here; the
   * scheduler's `access-log-retention` task calls it.
   */
  async prune(): Promise<number> {
    const before = this.#clock.now() - this.#o.retentionDays * DAY_MS;
    return await this.#pruneSlices(before, this.#o.maxRecords);
  }

  /** Deletes every record older than `before` (the storage clean-up), in slices. */
  async pruneBefore(before: number): Promise<number> {
    await this.flush();
    return await this.#pruneSlices(before, Number.MAX_SAFE_INTEGER);
  }

  start(): void {
    this.#flushTimer ??= setInterval(
      () => void this.flush(false, true),
      this.#o.flushIntervalMs ?? 100,
    );
  }

  /** Stops the timers, writes what is queued and closes the sinks. */
  async stop(): Promise<void> {
    clearInterval(this.#flushTimer);
    if (this.#earlyFlush !== undefined) clearImmediate(this.#earlyFlush);
    this.#flushTimer = this.#earlyFlush = undefined;
    await this.opened;
    await this.flush();
    // What waits in the spill file is written now if the writer takes it, else after a start.
    await this.#drain?.finish();
    this.#reportDrops();
    // Sinks reading from the store catch up before the writer thread closes.
    await this.#sinks.close();
    await this.#writer.close();
    await this.#spill?.close();
  }

  /** Opens the spill file (reading back what an earlier process left); none: resolves at once. */
  async #openSpill(): Promise<void> {
    if (!this.#spill) return;
    try {
      const rows = await this.#spill.open();
      if (rows > 0) {
        this.#logger.warn("access log spill file of an earlier run found; writing it back", {
          rows,
        });
      }
    } catch (err) {
      this.#logger.error("access log spill file could not be opened; overflow is dropped", {
        error: err as Error,
      });
    }
  }

  stats(): WriteQueueStats {
    return {
      queued: this.#queue.length + this.#inFlight,
      written: this.#written,
      dropped: this.#drops.total,
      dropped_verdicts: this.#drops.verdicts,
      dropped_sites: this.#drops.bySite(),
      sampled: this.#admission.sampledTotal,
      sampled_sites: this.#admission.sampledBySite(),
      sample_every: this.#admission.sampleEvery(this.#queue.length + this.#inFlight),
      spilled: this.#spill?.spilled ?? 0,
      spill_rows: this.#spill?.rows ?? 0,
      spill_bytes: this.#spill?.bytes ?? 0,
      // Retention's deletions and those made in step with the writes.
      pruned: this.#pruned + this.#writer.trimmed(),
      writer_escalations: this.#writer.escalations?.() ?? 0,
      writer_deescalations: this.#writer.deescalations?.() ?? 0,
    };
  }

  /** One batch of a flush to the writer; resolves with the rows written (0 when it failed). */
  #write(lines: string, count: number, defer: boolean): Promise<number> {
    const bulk = defer && this.#inFlight >= this.#open;
    this.#inFlight += count;
    const o = { count, defer, bulk, keep: this.#o.maxRecords };
    return this.#writer.writeLines(lines, o).then((n) => {
      this.#inFlight -= count;
      this.#written += n;
      return n;
    }, (err) => {
      this.#inFlight -= count;
      // To the spill file, written again once the writer takes batches (a thread restarting,
      // a locked store); the spill drain gives up on rows refused again and again (a full
      // disk, a corrupt file), which retrying does not cure.
      this.#refused(lines, count, err);
      return 0;
    });
  }

  /**
   * Slice by slice, so the batches the data plane hands over meanwhile are written between
   * slices instead of waiting for the whole deletion.
   */
  async #pruneSlices(before: number, keep: number): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.#writer.prune(before, keep);
      if (n === 0) break;
      total += n;
      this.#pruned += n;
    }
    return total;
  }

  #reportDrops(): void {
    this.#report.report({
      sampled: this.#admission.sampledTotal,
      sampledSites: () => this.#admission.sampledBySite(),
      sampleEvery: () => this.#admission.sampleEvery(this.#queue.length + this.#inFlight),
      spilled: this.#spill?.spilled ?? 0,
      spillRows: () => this.#spill?.rows ?? 0,
      dropped: this.#drops.total,
      droppedVerdicts: this.#drops.verdicts,
      droppedSites: () => this.#drops.bySite(),
    });
  }
}
