/**
 * The rate limiters of the protection controls: the global limit's, kept across policy rebuilds
 * that leave its limits unchanged (so are its counters), and each bot policy's threshold.
 */
import type { CompiledBotPolicy } from "./protection_compile.ts";
import type { RateLimitDoc } from "./protection_schema.ts";
import {
  createRateLimiter,
  type RateLimiter,
  type RateLimitOptions,
} from "../../engine/rate_limit.ts";

/** Makes a rate limiter; equal names mean one limiter across the threads that share state. */
export type LimiterFactory = (name: string, options: RateLimitOptions) => RateLimiter;
const ownLimiter: LimiterFactory = (_name, options) => createRateLimiter(options);

/** What a bot threshold counts: the client, at the request's time. */
interface Counted {
  readonly clientIp: string;
  readonly now: number;
}

export class ProtectionLimiters {
  readonly #makeLimiter: LimiterFactory;
  #globalLimiter: { doc: RateLimitDoc; json: string; limiter: RateLimiter } | undefined;
  readonly #botLimiters = new Map<string, RateLimiter>();
  /** A policy's threshold limiter: found by object per request, by limits across rebuilds. */
  readonly #botLimiterOf = new WeakMap<CompiledBotPolicy, RateLimiter>();

  /** `makeLimiter`: this thread's own limiters unless given (data-plane workers share theirs). */
  constructor(makeLimiter: LimiterFactory | undefined) {
    this.#makeLimiter = makeLimiter ?? ownLimiter;
  }

  /** True when the request takes the client over the bot policy's rate threshold. */
  overBotRate(b: CompiledBotPolicy, req: Counted): boolean {
    if (!b.rate_threshold) return false;
    let l = this.#botLimiterOf.get(b);
    if (!l) {
      const key = `${b.id}/${b.rate_threshold.requests}/${b.rate_threshold.window_seconds}`;
      l = this.#botLimiters.get(key);
      if (!l) {
        if (this.#botLimiters.size > 1000) this.#botLimiters.clear();
        l = this.#makeLimiter(`bot/${b.id}`, {
          requests: b.rate_threshold.requests,
          windowMs: b.rate_threshold.window_seconds * 1000,
          burst: 0,
          maxKeys: 50_000,
        });
        this.#botLimiters.set(key, l);
      }
      this.#botLimiterOf.set(b, l);
    }
    return !l.hit(req.clientIp, req.now).allowed;
  }

  /** The limiter survives rebuilds that leave the limits unchanged (counters are kept). */
  global(doc: RateLimitDoc): RateLimiter {
    const current = this.#globalLimiter;
    if (current?.doc === doc) return current.limiter;
    const json = JSON.stringify(doc);
    if (current?.json === json) {
      current.doc = doc;
      return current.limiter;
    }
    const limiter = this.#makeLimiter(`global/${doc.key}`, {
      requests: doc.requests,
      windowMs: doc.window_seconds * 1000,
      burst: doc.burst,
      maxKeys: doc.max_keys,
    });
    this.#globalLimiter = { doc, json, limiter };
    return limiter;
  }
}
