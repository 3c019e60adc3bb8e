/**
 * A histogram with fixed bucket bounds: counts per bucket, a sum and a count, kept in one typed
 * array so observing a value allocates nothing. Cumulative (Prometheus) counts, percentiles and
 * differences between two snapshots are computed from it off the request path.
 */

/** Upper bounds in microseconds of request and upstream latency (0.5 ms to 10 s). */
export const LATENCY_BOUNDS_US: readonly number[] = [
  500,
  1_000,
  2_500,
  5_000,
  10_000,
  25_000,
  50_000,
  100_000,
  250_000,
  500_000,
  1_000_000,
  2_500_000,
  5_000_000,
  10_000_000,
];

/** Upper bounds in microseconds of the engine's inspection time (10 µs to 100 ms). */
export const INSPECTION_BOUNDS_US: readonly number[] = [
  10,
  25,
  50,
  100,
  250,
  500,
  1_000,
  2_500,
  5_000,
  10_000,
  25_000,
  100_000,
];

/** Upper bounds in milliseconds of event-loop lag (1 ms to 1 s). */
export const LAG_BOUNDS_MS: readonly number[] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000];

export class Histogram {
  readonly bounds: readonly number[];
  /** Per-bucket counts (the last one is +Inf), then the sum, then the count. */
  readonly values: Float64Array;

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.values = new Float64Array(bounds.length + 3);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    const n = bounds.length;
    let i = 0;
    while (i < n && value > bounds[i]!) i++;
    const v = this.values;
    v[i]!++;
    v[n + 1]! += value;
    v[n + 2]!++;
  }

  get sum(): number {
    return this.values[this.bounds.length + 1]!;
  }

  get count(): number {
    return this.values[this.bounds.length + 2]!;
  }
}

/**
 * The value below which `q` (0..1) of the observations fall, interpolated linearly inside the
 * bucket (the way Prometheus' `histogram_quantile` does); null without observations. `counts`
 * holds per-bucket (not cumulative) counts, the +Inf bucket last.
 */
export function quantile(bounds: readonly number[], counts: ArrayLike<number>, q: number) {
  let total = 0;
  for (let i = 0; i <= bounds.length; i++) total += counts[i] ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i <= bounds.length; i++) {
    const c = counts[i] ?? 0;
    if (seen + c >= rank && c > 0) {
      // Past the last bound the best estimate is that bound.
      if (i === bounds.length) return bounds[bounds.length - 1]!;
      const lower = i === 0 ? 0 : bounds[i - 1]!;
      return lower + (bounds[i]! - lower) * ((rank - seen) / c);
    }
    seen += c;
  }
  return bounds[bounds.length - 1]!;
}
