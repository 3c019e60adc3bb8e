/**
 * Ships access-log batches to PostgreSQL in the background. `offer` only appends to a bounded
 * buffer and returns; one sender drains it, retrying with exponential back-off while the
 * database is down. When the buffer is full the oldest batch is dropped and counted, so a
 * dead sink costs bounded memory and never slows or loses a request (the local store still
 * has every record).
 */
import type { AccessLogRow } from "../../db/access_log_repo.ts";
import type { PgSink } from "../../db/pg_sink.ts";
import type { AccessLogSink } from "./access_log.ts";
import type { Logger } from "../core/logger.ts";

export interface PgShipperOptions {
  readonly batchSize: number;
  /** Batches kept while PostgreSQL is unreachable. */
  readonly maxBatches?: number;
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

export function createPgShipper(
  sink: PgSink,
  options: PgShipperOptions,
  logger: Logger,
): AccessLogSink {
  const maxBatches = options.maxBatches ?? 64;
  const minBackoff = options.minBackoffMs ?? 500;
  const maxBackoff = options.maxBackoffMs ?? 30_000;
  const buffer: AccessLogRow[][] = [];
  let tableReady = false;
  let sending: Promise<void> | undefined;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let backoff = minBackoff;
  let closed = false;
  let shippedRows = 0;
  let shippedBatches = 0;
  let droppedBatches = 0;
  let droppedRows = 0;
  let failures = 0;
  let up = false;

  async function drain(): Promise<void> {
    while (buffer.length > 0 && !closed) {
      const batch = buffer[0]!;
      try {
        if (!tableReady) {
          await sink.ensureTable();
          tableReady = true;
        }
        await sink.insert(batch);
      } catch (err) {
        failures++;
        if (up || failures === 1) {
          logger.warn("PostgreSQL access-log sink unavailable; retrying in the background", {
            error: err instanceof Error ? err.message : String(err),
            buffered_batches: buffer.length,
          });
        }
        up = false;
        retryTimer = setTimeout(() => {
          retryTimer = undefined;
          kick();
        }, backoff);
        backoff = Math.min(maxBackoff, backoff * 2);
        return;
      }
      // The batch may have been dropped as the oldest while it was in flight.
      if (buffer[0] === batch) buffer.shift();
      up = true;
      backoff = minBackoff;
      shippedBatches++;
      shippedRows += batch.length;
    }
  }

  function kick(): void {
    if (sending || retryTimer || closed) return;
    sending = drain().finally(() => {
      sending = undefined;
      if (buffer.length > 0 && !retryTimer && !closed) kick();
    });
  }

  return {
    offer(rows) {
      if (closed) return;
      for (let i = 0; i < rows.length; i += options.batchSize) {
        if (buffer.length >= maxBatches) {
          const old = buffer.shift()!;
          droppedBatches++;
          droppedRows += old.length;
        }
        buffer.push(rows.slice(i, i + options.batchSize));
      }
      kick();
    },
    stats() {
      return {
        postgresql: true,
        up,
        buffered_batches: buffer.length,
        shipped_batches: shippedBatches,
        shipped_rows: shippedRows,
        dropped_batches: droppedBatches,
        dropped_rows: droppedRows,
        failures,
      };
    },
    async close() {
      // Give a healthy sink a moment to ship what is buffered, then stop.
      if (retryTimer === undefined && sending) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([sending, new Promise((r) => timer = setTimeout(r, 2_000))]);
        clearTimeout(timer);
      }
      closed = true;
      clearTimeout(retryTimer);
      await sink.close().catch(() => {});
    },
  };
}
