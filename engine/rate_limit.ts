/**
 * A sliding-window rate limiter: the weighted two-window approximation (the previous fixed
 * window's count, weighted by how much of it still overlaps the sliding window, plus the
 * current window's count). Unlike a fixed window it does not let a client send twice the limit
 * across a window boundary, and it needs two counters per key instead of a timestamp log.
 *
 * Memory is bounded: keys are spread over shards, each a `Map` kept in least-recently-used
 * order, and a shard that reaches its share of `maxKeys` evicts its least recently seen key.
 * Sharding keeps each map small, so rehashing and eviction stay cheap at the cap. Each `hit` is
 * synchronous, so concurrent requests on the one event loop can never interleave inside it.
 * Time is passed in (`now`), which makes the limiter deterministic under a fake clock.
 */

export interface RateLimitOptions {
  /** Requests allowed per window. */
  readonly requests: number;
  readonly windowMs: number;
  /** Extra requests tolerated above the rate, for short spikes. */
  readonly burst: number;
  /** Upper bound on tracked keys (default 100,000). */
  readonly maxKeys?: number;
  /** Number of shards (default 16). */
  readonly shards?: number;
}

export type RateDecision =
  | { readonly allowed: true; readonly remaining: number }
  | { readonly allowed: false; readonly retryAfterMs: number };

export interface Counter {
  window: number;
  previous: number;
  current: number;
}

export interface RateLimiter {
  readonly options: Readonly<Required<RateLimitOptions>>;
  /** Counts one request for `key` at `now` unless it is over the limit. */
  hit(key: string, now: number): RateDecision;
  /** Keys currently tracked. */
  size(): number;
}

function shardOf(key: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % shards;
}

export function createRateLimiter(opts: RateLimitOptions): RateLimiter {
  const options = { maxKeys: 100_000, shards: 16, ...opts };
  const shards = Array.from({ length: options.shards }, () => new Map<string, Counter>());
  const perShard = Math.max(1, Math.floor(options.maxKeys / options.shards));
  const ceiling = options.requests + options.burst;
  const w = options.windowMs;

  return {
    options,
    hit(key, now) {
      const shard = shards[options.shards === 1 ? 0 : shardOf(key, options.shards)]!;
      const window = Math.floor(now / w);
      let c = shard.get(key);
      if (c) {
        shard.delete(key);
        if (c.window !== window) {
          c.previous = c.window === window - 1 ? c.current : 0;
          c.current = 0;
          c.window = window;
        }
      } else {
        c = { window, previous: 0, current: 0 };
        if (shard.size >= perShard) shard.delete(shard.keys().next().value!);
      }
      shard.set(key, c);
      const elapsed = now - window * w;
      const weight = 1 - elapsed / w;
      const estimate = c.previous * weight + c.current;
      if (estimate + 1 <= ceiling) {
        c.current++;
        return { allowed: true, remaining: Math.max(0, Math.floor(ceiling - estimate - 1)) };
      }
      return { allowed: false, retryAfterMs: retryAfter(c, elapsed, ceiling, w) };
    },
    size: () => shards.reduce((n, s) => n + s.size, 0),
  };
}

/** Milliseconds until one more request fits under `ceiling` (shared limiters use it too). */
export function retryAfter(
  c: Readonly<Counter>,
  elapsed: number,
  ceiling: number,
  w: number,
): number {
  if (c.current + 1 <= ceiling && c.previous > 0) {
    // Still this window: wait until enough of the previous window slides out.
    const t = w * (1 - (ceiling - c.current - 1) / c.previous);
    return Math.max(1, Math.ceil(t - elapsed));
  }
  // Next window: this window's count becomes the weighted previous one.
  const t = c.current > 0 ? w * (1 - (ceiling - 1) / c.current) : 0;
  return Math.max(1, Math.ceil(w - elapsed + Math.max(0, t)));
}
