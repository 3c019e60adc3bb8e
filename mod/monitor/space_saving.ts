/**
 * Space-saving heavy hitters (Metwally, Agrawal, El Abbadi 2005): at most `capacity` counters;
 * a new key takes over the smallest counter and inherits its count as its error bound. Every
 * key whose true count exceeds total/capacity is kept, and a kept key's count overestimates by
 * at most its `error`. Memory stays bounded whatever the traffic (random paths, spoofed
 * addresses), unlike a map of every key seen.
 */

export interface HeavyHitter {
  readonly key: string;
  readonly count: number;
  /** The most `count` may overestimate the key's true count by. */
  readonly error: number;
}

export class SpaceSaving {
  readonly capacity: number;
  readonly #counts = new Map<string, { count: number; error: number }>();

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.#counts.size;
  }

  add(key: string, by = 1, error = 0): void {
    const c = this.#counts.get(key);
    if (c !== undefined) {
      c.count += by;
      c.error += error;
      return;
    }
    if (this.#counts.size < this.capacity) {
      this.#counts.set(key, { count: by, error });
      return;
    }
    let minKey = "";
    let min: { count: number; error: number } | undefined;
    for (const [k, v] of this.#counts) {
      if (min === undefined || v.count < min.count) {
        min = v;
        minKey = k;
      }
    }
    this.#counts.delete(minKey);
    this.#counts.set(key, { count: min!.count + by, error: min!.count + error });
  }

  /** Adds another summary's counters (merging hours into a period). */
  merge(items: readonly HeavyHitter[]): void {
    for (const i of items) this.add(i.key, i.count, i.error);
  }

  /** The `n` largest counters, largest first. */
  top(n = this.capacity): HeavyHitter[] {
    return [...this.#counts].map(([key, v]) => ({ key, count: v.count, error: v.error }))
      .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1))
      .slice(0, n);
  }
}
