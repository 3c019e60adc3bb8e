/**
 * Writes the spill file's rows (`spill.ts`) back to the store once the writer has caught up:
 * chunk after chunk, each waiting for the writer's answer, while the write queue holds fewer
 * rows than its high-water mark (the data plane's new records first). A chunk the writer
 * refuses is tried again later ({@link RETRY_MS}, doubling), and after {@link TRIES} refusals
 * counted as lost: a full disk or a corrupt store is not cured by retrying for ever.
 */
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { SpillFile } from "./spill.ts";
import type { AccessLogWriter } from "./writer.ts";

/** Refusals of one chunk before its rows are counted as lost. */
export const TRIES = 5;
/** The first wait after a refused chunk (ms), doubling up to {@link RETRY_MAX_MS}. */
export const RETRY_MS = 1000;
export const RETRY_MAX_MS = 30_000;

export interface SpillDrainDeps {
  readonly writer: AccessLogWriter;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The access log's `max_records`, kept by every write. */
  readonly keep: number;
  /** Whether the queue is below its high-water mark (the spill is read only then). */
  readonly idle: () => boolean;
  /** Rows handed to the writer (+n) or answered (-n): held like the queue's own. */
  readonly sending: (n: number) => void;
  readonly written: (n: number) => void;
  /** Rows given up on. */
  readonly lost: (lines: string) => void;
}

export class SpillDrain {
  readonly #spill: SpillFile;
  readonly #d: SpillDrainDeps;
  #running: Promise<void> | undefined;
  #refusals = 0;
  #retryAt = Number.NEGATIVE_INFINITY;

  constructor(spill: SpillFile, deps: SpillDrainDeps) {
    this.#spill = spill;
    this.#d = deps;
  }

  /** Starts writing the spill back when there is something to write and the queue is idle. */
  kick(): void {
    if (this.#running || this.#spill.rows === 0 || !this.#d.idle()) return;
    if (this.#d.clock.now() < this.#retryAt) return;
    this.#running = this.#run().finally(() => this.#running = undefined);
  }

  /** At the stop: writes everything back that the writer takes now (no waiting for retries). */
  async finish(): Promise<void> {
    await this.#running;
    while (this.#spill.rows > 0 && await this.#one()) { /* next chunk */ }
  }

  async #run(): Promise<void> {
    while (this.#spill.rows > 0 && this.#d.idle() && await this.#one()) { /* next chunk */ }
  }

  /** One chunk to the writer; false when there was none or the writer refused it. */
  async #one(): Promise<boolean> {
    const chunk = await this.#spill.read();
    if (chunk === undefined) return false;
    this.#d.sending(chunk.count);
    try {
      this.#d.written(
        await this.#d.writer.writeLines(chunk.lines, { count: chunk.count, keep: this.#d.keep }),
      );
      this.#refusals = 0;
    } catch (err) {
      this.#refusals++;
      const giveUp = this.#refusals >= TRIES;
      this.#d.logger.error("access log spilled rows refused by the writer", {
        rows: chunk.count,
        refusals: this.#refusals,
        given_up: giveUp,
        error: err as Error,
      });
      if (!giveUp) {
        this.#retryAt = this.#d.clock.now() +
          Math.min(RETRY_MS * 2 ** (this.#refusals - 1), RETRY_MAX_MS);
        return false;
      }
      this.#refusals = 0;
      this.#d.lost(chunk.lines);
    } finally {
      this.#d.sending(-chunk.count);
    }
    await this.#spill.consumed(chunk);
    return true;
  }
}
