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
  /** Where the last response falls in the process's order of health events (`healthOrder`). */
  okSeq: number;
  /** Where the last failure falls in that order. */
  failedSeq: number;
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

/**
 * The order of upstream health events across the process's threads, without the wall clock
 * (a step of it, by NTP or by hand, would put a later event before an earlier one): one counter
 * in shared memory that every failure increments, and that a success reads. A success stamped s
 * came after every failure stamped up to s and before every failure stamped above s. The data
 * workers map the main thread's counter (`useHealthOrder`), so the stamps of every pool in the
 * process compare; the main thread's mirror merges the workers' reports by them
 * (`upstream_mirror.ts`). 64 bits: a failing upstream under load cannot wrap it.
 */
let healthOrder = new BigInt64Array(new SharedArrayBuffer(8));

/** This thread's health-order counter, for the data workers to map. */
export function healthOrderBuffer(): SharedArrayBuffer {
  return healthOrder.buffer as SharedArrayBuffer;
}

/** Maps the process's health-order counter (a data worker, with the main thread's buffer). */
export function useHealthOrder(buffer: SharedArrayBuffer): void {
  healthOrder = new BigInt64Array(buffer);
}

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
    okSeq: 0,
    failedSeq: 0,
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
      upstream.failedSeq = Number(Atomics.add(healthOrder, 0, 1n)) + 1;
      onHealth?.(upstream, upstream.failures === 1 ? "down" : "failure");
    },
    ok(upstream: Upstream): void {
      upstream.okSeq = Number(Atomics.load(healthOrder, 0));
      upstream.lastOkAt = clock.now();
      if (upstream.failures !== 0) {
        upstream.failures = 0;
        upstream.downUntil = 0;
        onHealth?.(upstream, "up");
      }
    },
  };
}
