/**
 * The access log's overload, told in the runtime log with its figures (never silently): a
 * warning while passed records are sampled and while records are spilled to disk, at most every
 * {@link REPORT_MS} each, and an error whenever records were lost for good.
 */
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";

/** Sampling and spilling are logged at most this often (ms); the counters say the rest. */
export const REPORT_MS = 10_000;

/** The write queue's counters now; the per-site figures are made only when a line is written. */
export interface OverloadFigures {
  readonly sampled: number;
  readonly sampledSites: () => Record<string, number>;
  readonly sampleEvery: () => number;
  readonly spilled: number;
  readonly spillRows: () => number;
  readonly dropped: number;
  readonly droppedVerdicts: number;
  readonly droppedSites: () => Record<string, Record<string, number>>;
}

export class OverloadReport {
  readonly #clock: Clock;
  readonly #logger: Logger;
  #sampled = 0;
  #sampledAt = Number.NEGATIVE_INFINITY;
  #spilled = 0;
  #spilledAt = Number.NEGATIVE_INFINITY;
  #dropped = 0;

  constructor(clock: Clock, logger: Logger) {
    this.#clock = clock;
    this.#logger = logger;
  }

  report(f: OverloadFigures): void {
    if (f.sampled !== this.#sampled || f.spilled !== this.#spilled) this.#warn(f);
    if (f.dropped === this.#dropped) return;
    this.#logger.error("access log records dropped (spill file full or failing, or batch failed)", {
      dropped_since_last: f.dropped - this.#dropped,
      dropped_total: f.dropped,
      dropped_verdicts: f.droppedVerdicts,
      dropped_sites: f.droppedSites(),
    });
    this.#dropped = f.dropped;
  }

  #warn(f: OverloadFigures): void {
    const now = this.#clock.now();
    if (f.sampled !== this.#sampled && now - this.#sampledAt >= REPORT_MS) {
      this.#sampledAt = now;
      this.#logger.warn("access log sampling passed requests (the writer is behind)", {
        sampled_since_last: f.sampled - this.#sampled,
        sampled_total: f.sampled,
        sample_every: f.sampleEvery(),
        sampled_sites: f.sampledSites(),
      });
      this.#sampled = f.sampled;
    }
    if (f.spilled !== this.#spilled && now - this.#spilledAt >= REPORT_MS) {
      this.#spilledAt = now;
      this.#logger.warn("access log spilling records to disk (the writer is behind)", {
        spilled_since_last: f.spilled - this.#spilled,
        spilled_total: f.spilled,
        spill_rows: f.spillRows(),
      });
      this.#spilled = f.spilled;
    }
  }
}
