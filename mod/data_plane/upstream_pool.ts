/**
 * A site's upstreams: round-robin with passive health. An upstream that fails (refused,
 * reset, timed out) is skipped for a cool-down that doubles with each consecutive failure,
 * up to a ceiling; one success makes it healthy again. When every upstream is cooling down
 * the one that recovers first is tried anyway, so a site never answers 502 without trying.
 */
import type { Clock } from "../core/clock.ts";

export interface Upstream {
  /** `http(s)://host:port`, no trailing slash. */
  readonly origin: string;
  /** `ws(s)://host:port`, for WebSocket pass-through. */
  readonly wsOrigin: string;
  readonly hostname: string;
  readonly port: number;
  /** Consecutive failures. */
  failures: number;
  /** Skipped until this time (ms since epoch, from the injected clock). */
  downUntil: number;
  /** Last time a response came back; a recent one means a pooled connection is likely open. */
  lastOkAt: number;
}

export interface UpstreamPool {
  readonly upstreams: readonly Upstream[];
  /** Next healthy upstream in turn, avoiding `except` when another exists. */
  pick(except?: Upstream): Upstream;
  fail(upstream: Upstream): void;
  ok(upstream: Upstream): void;
}

/**
 * Told when an upstream fails (`failure`; the first failure of a healthy one is `down`) and when
 * a failing one answers again (`up`). Monitoring turns these into metrics and events.
 */
export type UpstreamHealthHook = (upstream: Upstream, event: "down" | "failure" | "up") => void;

export const BASE_COOLDOWN_MS = 2_000;
export const MAX_COOLDOWN_MS = 60_000;

function toUpstream(origin: string): Upstream {
  const u = new URL(origin);
  const port = u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
  return {
    origin: u.origin,
    wsOrigin: u.origin.replace(/^http/, "ws"),
    hostname: u.hostname.replace(/^\[|\]$/g, ""),
    port,
    failures: 0,
    downUntil: 0,
    lastOkAt: 0,
  };
}

export function createUpstreamPool(
  origins: readonly string[],
  clock: Clock,
  onHealth?: UpstreamHealthHook,
): UpstreamPool {
  const upstreams = origins.map(toUpstream);
  if (upstreams.length === 0) throw new Error("An upstream pool needs at least one upstream");
  let turn = 0;
  return {
    upstreams,
    pick(except?: Upstream): Upstream {
      const n = upstreams.length;
      if (n === 1) return upstreams[0]!;
      const now = clock.now();
      let soonest = upstreams[0]!;
      for (let i = 0; i < n; i++) {
        const u = upstreams[(turn + i) % n]!;
        if (u !== except && u.downUntil <= now) {
          turn = (turn + i + 1) % n;
          return u;
        }
        if (u !== except && (soonest === except || u.downUntil < soonest.downUntil)) soonest = u;
      }
      turn = (turn + 1) % n;
      return soonest;
    },
    fail(upstream: Upstream): void {
      upstream.failures++;
      const cooldown = Math.min(MAX_COOLDOWN_MS, BASE_COOLDOWN_MS * 2 ** (upstream.failures - 1));
      upstream.downUntil = clock.now() + cooldown;
      onHealth?.(upstream, upstream.failures === 1 ? "down" : "failure");
    },
    ok(upstream: Upstream): void {
      if (upstream.failures !== 0) {
        upstream.failures = 0;
        upstream.downUntil = 0;
        onHealth?.(upstream, "up");
      }
      upstream.lastOkAt = clock.now();
    },
  };
}
