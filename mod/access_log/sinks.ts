/**
 * Where the access log's batches go besides the store: the sinks (the PostgreSQL shipper), a slot
 * that lets the sink be replaced while the log runs, and the feed that hands each batch on.
 */
import type { AccessLogRow } from "../../db/access_log_rows.ts";
import { parseRowLines } from "./lines.ts";

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
 *
 * @example
 * ```ts
 * const slot = createSinkSlot();
 * const log = createAccessLog(options, { repo, writer, clock, logger, sinks: [slot] });
 * await slot.replace(() => createPgShipper(sink, writer, { batchSize: 500 }, { logger, clock }));
 * ```
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

const NO_ROWS: readonly AccessLogRow[] = Object.freeze([]);

/**
 * Hands the access log's batches to its sinks: to a sink that takes rows, in batches of
 * `batchSize`, made from the batch's text; to a sink that reads the store, a wake-up call per
 * batch's worth of rows, with no rows kept for it.
 */
export class SinkFeed {
  readonly #sinks: readonly AccessLogSink[];
  readonly #batchSize: number;
  /** Rows waiting for a full batch before they are offered to the sinks. */
  #rows: AccessLogRow[] = [];
  /** Rows written since the wake-up-only sinks were last woken. */
  #unannounced = 0;

  constructor(sinks: readonly AccessLogSink[], batchSize: number) {
    this.#sinks = sinks;
    this.#batchSize = batchSize;
  }

  /**
   * Offers the sinks a batch of `count` rows (as text) in batches of `batchSize`; `all`
   * includes a partial batch. Rows are made from the text only for sinks that take rows.
   */
  offer(lines: string, count: number, all: boolean): void {
    const sinks = this.#sinks;
    if (sinks.length === 0) return;
    const size = this.#batchSize;
    // Sinks that only want a wake-up get one per batch's worth of rows, as before, but no rows
    // are kept for them.
    let keep = false;
    this.#unannounced += count;
    const wake = this.#unannounced >= size || (all && this.#unannounced > 0);
    for (const sink of sinks) {
      if (sink.wantsRows?.() !== false) keep = true;
      else if (wake) sink.offer(NO_ROWS);
    }
    if (wake) this.#unannounced = 0;
    if (!keep) {
      this.#rows = [];
      return;
    }
    if (count > 0) { for (const row of parseRowLines(lines)) this.#rows.push(row); }
    while (this.#rows.length >= size || (all && this.#rows.length > 0)) {
      const rows = this.#rows;
      const batch = rows.length === size ? rows : rows.slice(0, size);
      this.#rows = rows.length === batch.length ? [] : rows.slice(batch.length);
      for (const sink of sinks) if (sink.wantsRows?.() !== false) sink.offer(batch);
    }
  }

  /** Wakes every sink: rows the writer stored that were not offered (a data-plane worker's). */
  wake(): void {
    for (const sink of this.#sinks) sink.offer([]);
  }

  stats(): Record<string, unknown>[] {
    return this.#sinks.map((s) => s.stats());
  }

  /** Closes the sinks one by one (a shipper reading the store catches up first). */
  async close(): Promise<void> {
    for (const sink of this.#sinks) await sink.close();
  }
}
