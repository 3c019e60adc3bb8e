/**
 * Which records the access log's write queue takes when the writer falls behind: the record of
 * a blocked, challenged or logged request (a verdict) is always taken while the rows held stay
 * under a ceiling well above the queue's size; a passed request's record is taken whole below
 * the high-water mark, one in {@link SAMPLE_EVERY} between it and the queue's size, and none
 * beyond. Every passed record not taken is counted per site, so a flood of benign requests
 * cannot push an attack's records out of the log, and nothing is left out silently
 * (docs/data-plane.md, "Access logs").
 */
import type { AccessRecord } from "./record.ts";

/** Above the high-water mark (this share of `queue_size` held), passed records are sampled. */
export const HIGH_WATER_SHARE = 0.5;
/** Between the high-water mark and `queue_size`, one passed record (or worker batch) in this many is kept. */
export const SAMPLE_EVERY = 16;
/** Verdict records are taken until the rows held reach this many times `queue_size`. */
export const VERDICT_CEILING = 4;

/** A record that says what the WAF decided about an attack: never sampled. */
export function isVerdict(record: AccessRecord): boolean {
  return record.action !== "pass";
}

/** The per-site key of a sampled record: its site's name, `""` for a request no site matched. */
export function sampleKey(site: string | null): string {
  return site ?? "";
}

/** What the queue decides for one record or one batch of passed rows. */
export class Admission {
  readonly #highWater: number;
  readonly #passLimit: number;
  readonly #verdictLimit: number;
  /** Passed records (or batches) seen between the high-water mark and the limit. */
  #seen = 0;
  /** Passed records not written, by {@link sampleKey}. */
  readonly #sampled = new Map<string, number>();
  #sampledTotal = 0;

  constructor(queueSize: number) {
    this.#passLimit = queueSize;
    this.#highWater = Math.max(1, Math.floor(queueSize * HIGH_WATER_SHARE));
    this.#verdictLimit = queueSize * VERDICT_CEILING;
  }

  /** Rows held up to which everything is taken without asking. */
  get highWater(): number {
    return this.#highWater;
  }

  /** Whether a verdict's `count` rows fit beside the `held` ones. */
  verdict(held: number, count: number): boolean {
    return held + count <= this.#verdictLimit;
  }

  /**
   * Whether `count` passed rows are written beside the `held` ones: all below the high-water
   * mark, one batch in {@link SAMPLE_EVERY} up to the queue's size, none beyond. False means
   * the caller counts them with {@link sample}.
   */
  passed(held: number, count: number): boolean {
    if (held + count <= this.#highWater) return true;
    if (held + count > this.#passLimit) return false;
    return this.#seen++ % SAMPLE_EVERY === 0;
  }

  /** Counts `n` passed records of `site` left out. */
  sample(site: string, n: number): void {
    this.#sampled.set(site, (this.#sampled.get(site) ?? 0) + n);
    this.#sampledTotal += n;
  }

  get sampledTotal(): number {
    return this.#sampledTotal;
  }

  /** Passed records left out so far, by site name (`""`: no site matched). */
  sampledBySite(): Record<string, number> {
    return Object.fromEntries(this.#sampled);
  }
}
