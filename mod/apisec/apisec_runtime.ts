/**
 * The API-security checks' per-process state: discovery's sampling window and inventory, the
 * token verifier (remote key sets, verified tokens) and one sliding-window limiter per route limit,
 * counting per client address, separate from the global limiter. Limiters are found by their
 * compiled entry per request and kept by (id, requests, window) across policy rebuilds, so a
 * change elsewhere in the policy does not reset a client's count.
 */
import {
  createRateLimiter,
  type RateLimiter,
  type RateLimitOptions,
} from "../../engine/rate_limit.ts";
import {
  type CompiledApiSec,
  type CompiledAuth,
  type CompiledAuthRoute,
  type CompiledDiscovery,
  type CompiledRouteLimit,
  ignoredPath,
  inScope,
} from "./apisec_compile.ts";
import type { Inventory } from "./inventory.ts";
import type { NormalPath } from "../../engine/path_normalize.ts";
import { createTokenAuth, type TokenAuthDeps } from "./token_auth.ts";

/** What a route limit decided for one request. */
export type RouteLimitVerdict =
  | { readonly kind: "pass" }
  | { readonly kind: "rate_limited"; readonly rule: string; readonly retryAfterSeconds: number };

const PASS: RouteLimitVerdict = { kind: "pass" };
const MAX_KEYS_PER_ROUTE = 50_000;

export interface RouteLimitRequest {
  readonly siteId: string;
  /** The request's method and those its overrides name (`RequestView.methods`). */
  readonly methods: readonly string[];
  /** The normalised path. */
  readonly path: NormalPath;
  /**
   * Methods already counted for this request (phase 1), when a body's `_method` adds more:
   * a limit they are in scope of was counted then and is not counted again.
   */
  readonly counted?: readonly string[];
  readonly clientIp: string;
  readonly now: number;
}

const SAMPLE_WINDOW_MS = 60_000;

export interface ApiSecRuntimeDeps extends TokenAuthDeps {
  /** Where sampled requests go (discovery); workers hand them to the main thread's. */
  readonly inventory: Pick<Inventory, "sample">;
  /** Makes a route's limiter (default: this thread's own; workers share counters). */
  readonly limiter?: (name: string, options: RateLimitOptions) => RateLimiter;
  /**
   * The measured clock offset applied to token `exp`/`nbf` checks (`time.apply_offset`; 0 when
   * off), read per verification.
   */
  readonly timeOffsetMs?: () => number;
  /**
   * How many data-plane threads share `sample_limit` (default 1): each takes its share, so the
   * process samples at most the limit per window whichever thread serves a request.
   */
  readonly sampleShares?: number;
}

export function createApiSecRuntime(deps: ApiSecRuntimeDeps) {
  const tokens = createTokenAuth(deps);
  const shares = Math.max(1, deps.sampleShares ?? 1);
  let sampleWindow = 0;
  let sampled = 0;
  const byKey = new Map<string, RateLimiter>();
  const byEntry = new WeakMap<CompiledRouteLimit, RateLimiter>();

  function limiterOf(l: CompiledRouteLimit): RateLimiter {
    let limiter = byEntry.get(l);
    if (limiter) return limiter;
    const key = `${l.id}/${l.requests}/${l.windowMs}`;
    limiter = byKey.get(key);
    if (!limiter) {
      if (byKey.size > 2000) byKey.clear();
      limiter = (deps.limiter ?? ((_n, o) => createRateLimiter(o)))(`route/${l.id}`, {
        requests: l.requests,
        windowMs: l.windowMs,
        burst: 0,
        maxKeys: MAX_KEYS_PER_ROUTE,
      });
      byKey.set(key, limiter);
    }
    byEntry.set(l, limiter);
    return limiter;
  }

  return {
    inventory: deps.inventory,

    /**
     * Whether discovery takes this request: not an ignored path, and the one-minute window's
     * `sample_limit` not reached. Counts it when taken.
     */
    shouldSample(d: CompiledDiscovery, path: string, now: number): boolean {
      const window = Math.floor(now / SAMPLE_WINDOW_MS);
      if (window !== sampleWindow) {
        sampleWindow = window;
        sampled = 0;
      }
      if (sampled >= Math.ceil(d.sampleLimit / shares) || ignoredPath(d, path)) return false;
      sampled++;
      return true;
    },

    /**
     * Verifies a bearer token against the compiled `auth` settings, at the request's time plus
     * the applied clock offset.
     */
    authenticate: (a: CompiledAuth, authorization: string | undefined, now: number) =>
      tokens.authenticate(a, authorization, now + (deps.timeOffsetMs?.() ?? 0)),

    /** The first enabled route that needs a token for this request, if any. */
    authRoute(
      c: CompiledApiSec,
      siteId: string,
      methods: readonly string[],
      path: NormalPath,
    ): CompiledAuthRoute | undefined {
      for (const r of c.auth.routes) if (inScope(r, siteId, methods, path)) return r;
      return undefined;
    },

    /**
     * Counts the request against every enabled route limit whose method and path pattern it
     * matches; the first one over its limit answers.
     */
    routeLimits(c: CompiledApiSec, req: RouteLimitRequest): RouteLimitVerdict {
      for (const l of c.rateLimits) {
        if (!inScope(l, req.siteId, req.methods, req.path)) continue;
        if (req.counted !== undefined && inScope(l, req.siteId, req.counted, req.path)) continue;
        const d = limiterOf(l).hit(req.clientIp, req.now);
        if (!d.allowed) {
          return {
            kind: "rate_limited",
            rule: l.id,
            retryAfterSeconds: Math.max(1, Math.ceil(d.retryAfterMs / 1000)),
          };
        }
      }
      return PASS;
    },
  };
}

export type ApiSecRuntime = ReturnType<typeof createApiSecRuntime>;
