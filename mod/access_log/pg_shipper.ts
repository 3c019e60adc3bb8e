/**
 * Ships the access log to PostgreSQL from the local store, by a persisted cursor. The records
 * are already in SQLite (`access_logs`), so the shipper keeps no buffer of its own: it reads the
 * rows after its cursor (on the writer thread), inserts them as one batch, and only then moves
 * and saves the cursor. An outage therefore loses nothing that retention still holds: when
 * PostgreSQL answers again the shipper catches up from where it stopped, and rows that retention
 * deleted before they were shipped are counted (`skipped_rows`), never silently missed.
 *
 * Every insert has a deadline (`insertTimeoutMs`): a connection that stalls (no error, no answer)
 * fails the attempt, drops the pool's connections and retries with back-off, and health (`up`,
 * `stalled`, `last_error`) says so. The lag is reported in rows and in seconds (the age of the
 * oldest record not shipped yet). `offer` is only a wake-up call from the access log after a
 * flush; it never blocks and never holds rows.
 */
import type { PgSink } from "../../db/pg_sink.ts";
import type { StoredAccessLogRow } from "../../db/access_log_rows.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { ShipCursor } from "./pg_ship_cursor.ts";
import type { AccessLogSink } from "./sinks.ts";
import type { ShipSource } from "./writer.ts";

export interface PgShipperOptions {
  readonly batchSize: number;
  /** An insert without an answer by then fails (ms). */
  readonly insertTimeoutMs?: number;
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /** How often an idle shipper looks for new rows without a wake-up call (ms). */
  readonly idlePollMs?: number;
  /** The cursor's name in the store. */
  readonly cursorName?: string;
}

export type PgShipperStats = {
  readonly postgresql: true;
  readonly up: boolean;
  readonly stalled: boolean;
  readonly cursor: number;
  readonly lag_rows: number;
  readonly lag_seconds: number;
  readonly shipped_rows: number;
  readonly shipped_batches: number;
  readonly skipped_rows: number;
  readonly failures: number;
  readonly timeouts: number;
  readonly last_error: string | null;
  readonly last_success_at: string | null;
};

class Timeout extends Error {}

/** `p`, or a {@link Timeout} once `ms` have passed without its answer. */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Timeout(`no answer from PostgreSQL within ${ms} ms`)),
        ms,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Ships the store's rows to `sink` from `source` (the writer) by a persisted cursor.
 *
 * @example
 * ```ts
 * const shipper = createPgShipper(createPgSink({ dsn, poolSize: 4 }), writer, {
 *   batchSize: 500,
 * }, { logger, clock });
 * shipper.stats().lag_rows; // rows stored and not shipped yet
 * await shipper.close();
 * ```
 */
export function createPgShipper(
  sink: PgSink,
  source: ShipSource,
  options: PgShipperOptions,
  deps: { logger: Logger; clock: Clock },
): AccessLogSink & { stats(): PgShipperStats } {
  return new PgShipper(sink, source, options, deps);
}

class PgShipper implements AccessLogSink {
  readonly #sink: PgSink;
  readonly #source: ShipSource;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #batchSize: number;
  readonly #insertTimeout: number;
  readonly #minBackoff: number;
  readonly #maxBackoff: number;
  readonly #idlePoll: number;
  readonly #cursor: ShipCursor;
  #maxId = 0;
  #oldestUnshipped: number | null = null;
  #tableReady = false;
  #up = false;
  #closed = false;
  #inFlightSince: number | undefined;
  #shippedRows = 0;
  #shippedBatches = 0;
  #skippedRows = 0;
  #failures = 0;
  #timeouts = 0;
  #lastError: string | null = null;
  #lastSuccess: number | null = null;
  #backoff: number;
  /** Wakes an idle wait (a flush happened) or any wait (closing). */
  #wake: (() => void) | undefined;
  #idle = false;
  readonly #loop: Promise<void>;

  constructor(
    sink: PgSink,
    source: ShipSource,
    options: PgShipperOptions,
    deps: { logger: Logger; clock: Clock },
  ) {
    this.#sink = sink;
    this.#source = source;
    this.#logger = deps.logger;
    this.#clock = deps.clock;
    this.#batchSize = options.batchSize;
    this.#insertTimeout = options.insertTimeoutMs ?? 10_000;
    this.#minBackoff = options.minBackoffMs ?? 500;
    this.#maxBackoff = options.maxBackoffMs ?? 30_000;
    this.#idlePoll = options.idlePollMs ?? 1_000;
    this.#backoff = this.#minBackoff;
    this.#cursor = new ShipCursor(source, options.cursorName ?? "postgresql", deps);
    this.#loop = this.#run();
  }

  offer(): void {
    if (this.#idle) setTimeout(() => this.#wake?.(), 0);
  }

  /** It ships from the store by its cursor: an offer is only a wake-up call. */
  wantsRows(): boolean {
    return false;
  }

  stats(): PgShipperStats {
    const now = this.#clock.now();
    const c = this.#cursor.value ?? this.#maxId;
    return {
      postgresql: true,
      up: this.#up,
      stalled: this.#inFlightSince !== undefined && now - this.#inFlightSince > this.#insertTimeout,
      cursor: c,
      lag_rows: Math.max(0, this.#maxId - c),
      lag_seconds: this.#oldestUnshipped === null
        ? 0
        : Math.max(0, (now - this.#oldestUnshipped) / 1000),
      shipped_rows: this.#shippedRows,
      shipped_batches: this.#shippedBatches,
      skipped_rows: this.#skippedRows,
      failures: this.#failures,
      timeouts: this.#timeouts,
      last_error: this.#lastError,
      last_success_at: this.#lastSuccess === null
        ? null
        : new Date(this.#lastSuccess).toISOString(),
    };
  }

  async close(): Promise<void> {
    // Give a healthy sink a moment to catch up with the last flush, then stop.
    for (let i = 0; i < 20 && this.#up && this.stats().lag_rows > 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    this.#closed = true;
    this.#wake?.();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.#loop, new Promise((r) => timer = setTimeout(r, 2_000))]);
    clearTimeout(timer);
    await this.#sink.close().catch(() => {});
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      try {
        await this.#ship();
      } catch (err) {
        // The store side failed (the writer closing, a busy store): try again shortly.
        if (this.#closed) break;
        this.#logger.error("PostgreSQL access-log shipper could not read the store", {
          error: err as Error,
        });
        await this.#sleep(this.#minBackoff, false);
      }
    }
  }

  /** One batch: read after the cursor, insert it (within the deadline), move the cursor. */
  async #ship(): Promise<void> {
    const cursor = await this.#cursor.current();
    const batch = await this.#source.readAfter(cursor, this.#batchSize);
    this.#maxId = batch.maxId;
    const rows = batch.rows;
    if (rows.length === 0) {
      this.#oldestUnshipped = null;
      await this.#sleep(this.#idlePoll, true);
      return;
    }
    this.#oldestUnshipped = rows[0]!.time;
    this.#inFlightSince = this.#clock.now();
    try {
      await withTimeout(this.#insert(rows), this.#insertTimeout);
    } catch (err) {
      await this.#failed(err, cursor);
      return;
    } finally {
      this.#inFlightSince = undefined;
    }
    await this.#shipped(rows, cursor);
  }

  async #insert(rows: readonly StoredAccessLogRow[]): Promise<void> {
    if (!this.#tableReady) {
      await this.#sink.ensureTable();
      this.#tableReady = true;
    }
    await this.#sink.insert(rows);
  }

  /** An insert failed or timed out: counted, told once, retried from the cursor after a wait. */
  async #failed(err: unknown, cursor: number): Promise<void> {
    this.#failures++;
    const timedOut = err instanceof Timeout;
    if (timedOut) this.#timeouts++;
    this.#lastError = err instanceof Error ? err.message : String(err);
    if (this.#up || this.#failures === 1) {
      this.#logger.warn("PostgreSQL access-log sink unavailable; retrying from its cursor", {
        error: this.#lastError,
        cursor,
        lag_rows: this.#maxId - cursor,
      });
    }
    this.#up = false;
    // A stalled connection never fails by itself: drop it so the retry opens a fresh one.
    if (timedOut) await this.#sink.reset();
    await this.#sleep(this.#backoff, false);
    this.#backoff = Math.min(this.#maxBackoff, this.#backoff * 2);
  }

  /** A batch is in PostgreSQL: the cursor moves past it and is saved. */
  async #shipped(rows: readonly StoredAccessLogRow[], cursor: number): Promise<void> {
    const last = rows[rows.length - 1]!.id;
    // Ids only grow; a gap before the first row means retention deleted rows never shipped.
    if (rows[0]!.id > cursor + 1) this.#skippedRows += rows[0]!.id - cursor - 1;
    // The cursor and the counters move together (stats never show a cursor past rows not
    // counted); saving the cursor comes after.
    this.#cursor.value = last;
    this.#shippedBatches++;
    this.#shippedRows += rows.length;
    if (!this.#up && this.#failures > 0) {
      this.#logger.info("PostgreSQL access-log sink shipping again", { cursor: last });
    }
    this.#up = true;
    this.#lastError = null;
    this.#lastSuccess = this.#clock.now();
    this.#backoff = this.#minBackoff;
    await this.#cursor.save();
  }

  #sleep(ms: number, interruptible: boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        this.#idle = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
      this.#idle = interruptible;
    });
  }
}
