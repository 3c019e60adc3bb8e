/**
 * Which records the access log's write queue takes when the writer falls behind: the record of
 * a blocked, challenged or logged request (a verdict) is always taken while the rows held stay
 * under a ceiling well above the queue's size (past it, it goes to the spill file, `spill.ts`);
 * a passed request's record is taken whole below the high-water mark, one in N between it and
 * the queue's size (N doubling from 2 to {@link MAX_SAMPLE_EVERY} as the backlog grows), and
 * none beyond. Every passed record not taken is counted per site, so a flood of benign requests
 * cannot push an attack's records out of the log, and nothing is left out silently
 * (docs/access-logs.md, "Under overload").
 */
import type { AccessRecord } from "./record.ts";

/** Above the high-water mark (this share of `queue_size` held), passed records are sampled. */
export const HIGH_WATER_SHARE = 0.5;
/**
 * The sampling rate's steps between the high-water mark and the queue's size: the range is cut
 * in this many equal parts, and in the k-th (from 0) one passed record (or worker batch) in
 * 2^(k+1) is kept, so at the mark 1 in 2 and just below the queue's size 1 in 256.
 */
export const SAMPLE_STEPS = 8;
/** The largest N of the 1-in-N sampling (its last step). */
export const MAX_SAMPLE_EVERY = 2 ** SAMPLE_STEPS;
/** Verdict records are held in memory until the rows held reach this many times `queue_size`. */
export const VERDICT_CEILING = 4;

/** A record that says what the WAF decided about a request other than pass it: never sampled. */
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

  /** Whether a verdict's `count` rows fit beside the `held` ones in memory. */
  verdict(held: number, count: number): boolean {
    return held + count <= this.#verdictLimit;
  }

  /**
   * The N of the 1-in-N sampling of passed records with `held` rows held: 1 up to the
   * high-water mark, then 2, 4, ... {@link MAX_SAMPLE_EVERY} as the backlog nears the queue's
   * size, 0 (none taken) past it.
   */
  sampleEvery(held: number): number {
    if (held <= this.#highWater) return 1;
    if (held > this.#passLimit) return 0;
    const share = (held - this.#highWater) / Math.max(1, this.#passLimit - this.#highWater);
    return 2 ** (1 + Math.min(SAMPLE_STEPS - 1, Math.floor(share * SAMPLE_STEPS)));
  }

  /**
   * Whether `count` passed rows are written beside the `held` ones: all below the high-water
   * mark, one batch in {@link sampleEvery} up to the queue's size (deterministic: a running
   * count, no randomness), none beyond. False means the caller counts them with {@link sample}.
   */
  passed(held: number, count: number): boolean {
    const every = this.sampleEvery(held + count);
    if (every === 1) return true;
    if (every === 0) return false;
    return this.#seen++ % every === 0;
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

/**
 * Records lost for good (a spill file full or failing, a batch that kept failing), by site name
 * (`""`: no site matched) and action (`pass`, `block`, `challenge`, `log`).
 */
export class DropCounts {
  readonly #by = new Map<string, Map<string, number>>();
  #total = 0;
  #verdicts = 0;

  add(site: string, action: string, n: number): void {
    let m = this.#by.get(site);
    if (m === undefined) this.#by.set(site, m = new Map());
    m.set(action, (m.get(action) ?? 0) + n);
    this.#total += n;
    if (action !== "pass") this.#verdicts += n;
  }

  get total(): number {
    return this.#total;
  }

  /** Of {@link total}, records of requests that were not passed. */
  get verdicts(): number {
    return this.#verdicts;
  }

  /** `{site: {action: n}}`. */
  bySite(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const [site, m] of this.#by) out[site] = Object.fromEntries(m);
    return out;
  }
}
