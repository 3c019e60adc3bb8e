/**
 * State the data-plane workers share exactly: rate-limit counters (the global limit, bot
 * thresholds, API-security route limits) and the used bot-puzzle nonces. It lives in
 * `SharedArrayBuffer` tables that every worker maps, so a request decides with one short locked
 * update of shared memory and never waits on a message to another thread.
 *
 * A table is an array of buckets of {@link BUCKET} slots; a key hashes (two independent 32-bit
 * hashes, so a false match needs both to collide) to one bucket, which a spin lock guards for
 * the few dozen instructions of an update. The lock word holds the owner's id; a worker that
 * dies holding it (terminated mid-update) is cleared by the main thread when it restarts the
 * worker ({@link clearLocksOf}), and a waiter that spins far longer than any update takes the
 * lock over. Memory is fixed: a full bucket evicts its least recently used slot, as the
 * single-thread limiter's shards evict their oldest key.
 */
import type { RateDecision, RateLimiter, RateLimitOptions } from "../../engine/rate_limit.ts";
import { retryAfter } from "../../engine/rate_limit.ts";
import type { NonceStore } from "../protection/challenges.ts";

/** Slots per bucket: one lock guards them, a probe reads them all. */
export const BUCKET = 8;
/** Int32 words per slot: hash 1, hash 2, window (or expiry), previous, current, last use. */
const SLOT = 6;
const H1 = 0;
const H2 = 1;
const WIN = 2;
const PREV = 3;
const CUR = 4;
const SEEN = 5;
/** Spins after which a lock is taken over (its holder must have died mid-update). */
const MAX_SPINS = 1 << 22;

/** The buffers one process shares with its workers (structured-cloned, not copied). */
export interface SharedStateBuffers {
  readonly limits: SharedArrayBuffer;
  readonly nonces: SharedArrayBuffer;
  /** One float: the measured clock offset (`time.apply_offset`) the main thread publishes. */
  readonly offset: SharedArrayBuffer;
}

/**
 * A fixed-size shared hash table of counters. `key()` hashes the key of the next `update()` into
 * fields of the table (one thread, nothing between the two calls), so an update allocates nothing
 * for its key.
 */
class SharedTable {
  readonly #locks: Int32Array;
  readonly #slots: Int32Array;
  readonly buckets: number;
  readonly #owner: number;
  #h1 = 0;
  #h2 = 0;

  constructor(buffer: SharedArrayBuffer, owner: number) {
    const buckets = buffer.byteLength / 4 / (1 + BUCKET * SLOT);
    this.buckets = buckets;
    this.#locks = new Int32Array(buffer, 0, buckets);
    this.#slots = new Int32Array(buffer, buckets * 4, buckets * BUCKET * SLOT);
    this.#owner = owner;
  }

  /** Two independent 32-bit hashes of `name` and `key` (FNV-1a and a multiply-xor mix). */
  key(name: string, key: string): this {
    let a = 0x811c9dc5;
    let b = 0x9e3779b9 ^ name.length;
    for (let i = 0; i < name.length; i++) {
      const c = name.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
      b ^= b >>> 15;
    }
    a = Math.imul(a ^ 0xff, 0x01000193);
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
      b ^= b >>> 15;
    }
    // (0, 0) marks a free slot.
    this.#h1 = a | 0 || 1;
    this.#h2 = b | 0;
    return this;
  }

  /**
   * Runs `fn` on the bucket of the key `key()` hashed, under its lock; `fn` gets the slot's word
   * offset, or -1 when the key is absent and `insert` is false.
   */
  update<T>(now: number, fn: (slots: Int32Array, at: number) => T, insert = true): T {
    const b = (this.#h1 >>> 0) % this.buckets;
    const locks = this.#locks;
    let spins = 0;
    for (;;) {
      const held = Atomics.compareExchange(locks, b, 0, this.#owner);
      if (held === 0) break;
      if (++spins > MAX_SPINS && Atomics.compareExchange(locks, b, held, this.#owner) === held) {
        break;
      }
    }
    try {
      return fn(this.#slots, this.#find(b, now, insert));
    } finally {
      Atomics.store(locks, b, 0);
    }
  }

  /** The key's slot in bucket `b`, or a free or least recently used one made fresh. */
  #find(b: number, now: number, insert: boolean): number {
    const h1 = this.#h1;
    const h2 = this.#h2;
    const s = this.#slots;
    const first = b * BUCKET * SLOT;
    let victim = first;
    let oldest = Infinity;
    const sec = (now / 1000) | 0;
    for (let at = first; at < first + BUCKET * SLOT; at += SLOT) {
      if (s[at + H1] === h1 && s[at + H2] === h2) return at;
      const seen = s[at + H1] === 0 && s[at + H2] === 0 ? -Infinity : s[at + SEEN]!;
      if (seen < oldest) {
        oldest = seen;
        victim = at;
      }
    }
    if (!insert) return -1;
    s[victim + H1] = h1;
    s[victim + H2] = h2;
    s[victim + WIN] = 0;
    s[victim + PREV] = 0;
    s[victim + CUR] = 0;
    s[victim + SEEN] = sec;
    return victim;
  }

  /** Slots in use (a scan; for diagnostics and tests). */
  size(match?: (slots: Int32Array, at: number) => boolean): number {
    let n = 0;
    const s = this.#slots;
    for (let at = 0; at < s.length; at += SLOT) {
      if ((s[at + H1] !== 0 || s[at + H2] !== 0) && (match?.(s, at) ?? true)) n++;
    }
    return n;
  }

  /** Releases every lock `owner` holds (called when that worker is gone). */
  clearLocksOf(owner: number): number {
    let n = 0;
    for (let b = 0; b < this.buckets; b++) {
      if (Atomics.compareExchange(this.#locks, b, owner, 0) === owner) n++;
    }
    return n;
  }
}

function tableBuffer(buckets: number): SharedArrayBuffer {
  return new SharedArrayBuffer(buckets * 4 * (1 + BUCKET * SLOT));
}

/**
 * Allocates the shared tables (on the main thread). Sized for the single-thread defaults:
 * 100,000 keys per limiter over a few limiters, and 100,000 remembered nonces.
 */
export function allocateSharedState(
  sizes: { limitBuckets?: number; nonceBuckets?: number } = {},
): SharedStateBuffers {
  return {
    limits: tableBuffer(sizes.limitBuckets ?? 1 << 16),
    nonces: tableBuffer(sizes.nonceBuckets ?? 1 << 14),
    offset: new SharedArrayBuffer(8),
  };
}

/** One worker's view of the shared state. */
export interface SharedState {
  /** A limiter counting in the shared table; `name` keeps limiters apart. */
  limiter(name: string, options: RateLimitOptions): RateLimiter;
  /** The used-nonce set of bot puzzles. */
  readonly nonces: NonceStore;
  /** Releases the locks a dead worker held; returns how many. */
  clearLocksOf(owner: number): number;
  /** The clock offset the main thread last published (token expiry checks apply it). */
  offsetMs(): number;
  /** Publishes the clock offset (the main thread). */
  setOffsetMs(ms: number): void;
}

/** Maps the buffers; `owner` (1..) is written into the locks this thread holds. */
export function openSharedState(buffers: SharedStateBuffers, owner: number): SharedState {
  const limits = new SharedTable(buffers.limits, owner);
  const nonces = new SharedTable(buffers.nonces, owner);
  // An aligned 8-byte word: a torn read is not possible on the platforms Deno runs on.
  const offset = new Float64Array(buffers.offset);
  return {
    offsetMs: () => offset[0]!,
    setOffsetMs: (ms) => void (offset[0] = ms),
    limiter: (name, opts) => sharedLimiter(limits, name, opts),
    nonces: {
      has(nonce, now) {
        // A probe never claims a slot (that would evict another nonce).
        return nonces.key("nonce", nonce).update(
          now,
          (s, at) => at >= 0 && s[at + CUR] === 1 && s[at + WIN]! * 1000 > now,
          false,
        );
      },
      add(nonce, expiresAt, now) {
        return nonces.key("nonce", nonce).update(now, (s, at) => {
          if (s[at + CUR] === 1 && s[at + WIN]! * 1000 > now) return false;
          s[at + WIN] = Math.ceil(expiresAt / 1000);
          s[at + CUR] = 1;
          s[at + SEEN] = (now / 1000) | 0;
          return true;
        });
      },
      size: () => nonces.size((s, at) => s[at + CUR] === 1),
    },
    clearLocksOf: (o) => limits.clearLocksOf(o) + nonces.clearLocksOf(o),
  };
}

/**
 * The engine's sliding-window limiter (`engine/rate_limit.ts`: the weighted two-window
 * estimate) with its counters in the shared table, so N per window is N across all workers.
 */
function sharedLimiter(table: SharedTable, name: string, opts: RateLimitOptions): RateLimiter {
  const options = { maxKeys: 100_000, shards: 16, ...opts };
  const ceiling = options.requests + options.burst;
  const w = options.windowMs;
  const tag = `${name}/${options.requests}/${options.burst}/${w}`;
  return {
    options,
    hit(key: string, now: number): RateDecision {
      const window = Math.floor(now / w) | 0;
      return table.key(tag, key).update(now, (s, at) => {
        if (s[at + WIN] !== window) {
          s[at + PREV] = s[at + WIN] === ((window - 1) | 0) ? s[at + CUR]! : 0;
          s[at + CUR] = 0;
          s[at + WIN] = window;
        }
        s[at + SEEN] = (now / 1000) | 0;
        const previous = s[at + PREV]!;
        const current = s[at + CUR]!;
        const elapsed = now - Math.floor(now / w) * w;
        const estimate = previous * (1 - elapsed / w) + current;
        if (estimate + 1 <= ceiling) {
          s[at + CUR] = current + 1;
          return { allowed: true, remaining: Math.max(0, Math.floor(ceiling - estimate - 1)) };
        }
        return {
          allowed: false,
          retryAfterMs: retryAfter({ window, previous, current }, elapsed, ceiling, w),
        };
      });
    },
    size: () => table.size(),
  };
}
