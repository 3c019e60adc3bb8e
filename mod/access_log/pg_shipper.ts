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
import type { ShipStart } from "../../db/access_log_cursors.ts";
import type { ShipSource } from "./writer.ts";
import type { PgSink } from "../../db/pg_sink.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { AccessLogSink } from "./sinks.ts";

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

export interface PgShipperStats {
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
}

class Timeout extends Error {}

/**
 * How far before its creation a sink whose start failed in the store starts (by the records'
 * time): a record is written up to a flush interval (and the writer's backlog) after its
 * request ended, so a row written after the first attempt may be of a request that ended a
 * little before it. The price: up to a minute of records from before the sink is shipped too.
 */
const START_MARGIN_MS = 60_000;

export function createPgShipper(
  sink: PgSink,
  source: ShipSource,
  options: PgShipperOptions,
  deps: { logger: Logger; clock: Clock },
): AccessLogSink & { stats(): PgShipperStats } {
  const { logger, clock } = deps;
  const name = options.cursorName ?? "postgresql";
  const insertTimeout = options.insertTimeoutMs ?? 10_000;
  const minBackoff = options.minBackoffMs ?? 500;
  const maxBackoff = options.maxBackoffMs ?? 30_000;
  const idlePoll = options.idlePollMs ?? 1_000;
  let cursor: number | undefined;
  let maxId = 0;
  let oldestUnshipped: number | null = null;
  let tableReady = false;
  let up = false;
  let closed = false;
  let inFlightSince: number | undefined;
  let shippedRows = 0;
  let shippedBatches = 0;
  let skippedRows = 0;
  let failures = 0;
  let timeouts = 0;
  let lastError: string | null = null;
  let lastSuccess: number | null = null;
  let backoff = minBackoff;
  /** Wakes an idle wait (a flush happened) or any wait (closing). */
  let wake: (() => void) | undefined;
  let idle = false;

  const sleep = (ms: number, interruptible: boolean) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        idle = false;
        resolve();
      }
      wake = done;
      idle = interruptible;
    });

  function withTimeout<T>(p: Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    return Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Timeout(`no answer from PostgreSQL within ${insertTimeout} ms`)),
          insertTimeout,
        );
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /**
   * Where shipping starts, asked now, as the shipper is created: the request takes its place
   * among the writes (the writer thread handles them in order), so every row written after this
   * point is after the cursor. A new sink starts at the present (it does not replay the retained
   * history), and that present must be this moment, not whenever the writer answers: asking for
   * the saved cursor first and for the newest id only after the answer let the rows written in
   * between (the first 10 to 180 requests of a server whose writer thread started slowly) pass
   * unshipped and uncounted. When the store refuses only the cursor's save, the start read is
   * kept and saved later (`unsaved`); when the request fails outright, the retry asks for the
   * start since this moment (less {@link START_MARGIN_MS}), not for the newest id then, which
   * skipped every row written between the two.
   */
  const createdAt = clock.now();
  let starting: Promise<ShipStart> | undefined = source.startCursor(name, createdAt);
  let unsaved = false;

  async function ship(): Promise<void> {
    if (cursor === undefined) {
      const start = starting ??
        source.startCursor(name, clock.now(), createdAt - START_MARGIN_MS);
      starting = undefined;
      const answer = await start;
      cursor = answer.cursor;
      unsaved = !answer.saved;
      if (unsaved) {
        logger.warn("PostgreSQL access-log sink could not save where it starts; saving it later", {
          cursor,
          error: answer.error ?? null,
        });
      }
    }
    if (unsaved) {
      // Until it is saved a restart would start at the newest id then: save it before idling.
      await source.saveCursor(name, cursor, clock.now()).then(saved, () => {});
    }
    const batch = await source.readAfter(cursor, options.batchSize);
    maxId = batch.maxId;
    const rows = batch.rows;
    if (rows.length === 0) {
      oldestUnshipped = null;
      await sleep(idlePoll, true);
      return;
    }
    oldestUnshipped = rows[0]!.time;
    inFlightSince = clock.now();
    try {
      await withTimeout((async () => {
        if (!tableReady) {
          await sink.ensureTable();
          tableReady = true;
        }
        await sink.insert(rows);
      })());
    } catch (err) {
      failures++;
      const timedOut = err instanceof Timeout;
      if (timedOut) timeouts++;
      lastError = err instanceof Error ? err.message : String(err);
      if (up || failures === 1) {
        logger.warn("PostgreSQL access-log sink unavailable; retrying from its cursor", {
          error: lastError,
          cursor,
          lag_rows: maxId - cursor,
        });
      }
      up = false;
      // A stalled connection never fails by itself: drop it so the retry opens a fresh one.
      if (timedOut) await sink.reset();
      await sleep(backoff, false);
      backoff = Math.min(maxBackoff, backoff * 2);
      return;
    } finally {
      inFlightSince = undefined;
    }
    const last = rows[rows.length - 1]!.id;
    // Ids only grow; a gap before the first row means retention deleted rows never shipped.
    if (rows[0]!.id > cursor + 1) skippedRows += rows[0]!.id - cursor - 1;
    // The cursor and the counters move together (stats never show a cursor past rows not
    // counted); saving the cursor comes after (a failed save re-ships the batch after a restart,
    // which the insert's ON CONFLICT absorbs).
    cursor = last;
    shippedBatches++;
    shippedRows += rows.length;
    if (!up && failures > 0) logger.info("PostgreSQL access-log sink shipping again", { cursor });
    up = true;
    lastError = null;
    lastSuccess = clock.now();
    backoff = minBackoff;
    await source.saveCursor(name, cursor, clock.now());
    saved();
  }

  /** The cursor is persisted: one that was not is now (the operator was told, and is again). */
  function saved(): void {
    if (!unsaved) return;
    unsaved = false;
    logger.info("PostgreSQL access-log sink saved where it starts", { cursor: cursor ?? null });
  }

  const loop = (async () => {
    while (!closed) {
      try {
        await ship();
      } catch (err) {
        // The store side failed (the writer closing, a busy store): try again shortly.
        if (closed) break;
        logger.error("PostgreSQL access-log shipper could not read the store", {
          error: err as Error,
        });
        await sleep(minBackoff, false);
      }
    }
  })();

  function stats(): PgShipperStats {
    const now = clock.now();
    const c = cursor ?? maxId;
    return {
      postgresql: true,
      up,
      stalled: inFlightSince !== undefined && now - inFlightSince > insertTimeout,
      cursor: c,
      lag_rows: Math.max(0, maxId - c),
      lag_seconds: oldestUnshipped === null ? 0 : Math.max(0, (now - oldestUnshipped) / 1000),
      shipped_rows: shippedRows,
      shipped_batches: shippedBatches,
      skipped_rows: skippedRows,
      failures,
      timeouts,
      last_error: lastError,
      last_success_at: lastSuccess === null ? null : new Date(lastSuccess).toISOString(),
    };
  }

  return {
    offer() {
      if (idle) setTimeout(() => wake?.(), 0);
    },
    // It ships from the store by its cursor: an offer is only a wake-up call.
    wantsRows: () => false,
    stats: stats as () => PgShipperStats & Record<string, number | boolean>,
    async close() {
      // Give a healthy sink a moment to catch up with the last flush, then stop.
      for (let i = 0; i < 20 && up && stats().lag_rows > 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      closed = true;
      wake?.();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([loop, new Promise((r) => timer = setTimeout(r, 2_000))]);
      clearTimeout(timer);
      await sink.close().catch(() => {});
    },
  };
}
