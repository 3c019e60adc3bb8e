/**
 * The main thread's copy of upstream health when data workers serve (`app/data_workers.ts`):
 * each worker has its own pool and reports its failures ("down", "failure") and recoveries
 * ("up", and the successes it saw), each stamped with when it happened. The copy is what the
 * health API and `waf_upstream_up` read.
 *
 * The rule: reports are merged by the time they were made, not by the order they arrive in
 * (two workers' messages interleave freely).
 * - A failure report stays in force, per worker (its latest replaces its earlier one), until
 *   the upstream is seen answering after it: a success reported by any worker at a later time.
 * - A success clears every failure reported before it (of any worker); a failure reported after
 *   it stays, so one worker's stale "up" never hides another's "down".
 * - A failure reported before the latest success arrives stale and is not applied.
 * - The upstream's `failures` and `downUntil` are the worst of the failures in force (the most
 *   consecutive failures, the latest cool-down end); none in force: 0 and 0, healthy.
 */
import type { Upstream } from "./upstream_pool.ts";

interface Down {
  readonly failures: number;
  readonly downUntil: number;
  readonly at: number;
}

interface Reports {
  /** Failure reports in force, by worker. */
  readonly downs: Map<number, Down>;
  /** The latest time a worker saw the upstream answer. */
  upAt: number;
}

export function createUpstreamMirror() {
  const reports = new WeakMap<Upstream, Reports>();
  const of = (u: Upstream): Reports => {
    let r = reports.get(u);
    if (r === undefined) reports.set(u, r = { downs: new Map(), upAt: -Infinity });
    return r;
  };
  const merge = (u: Upstream, r: Reports): void => {
    let failures = 0;
    let downUntil = 0;
    for (const d of r.downs.values()) {
      failures = Math.max(failures, d.failures);
      downUntil = Math.max(downUntil, d.downUntil);
    }
    u.failures = failures;
    u.downUntil = downUntil;
  };
  return {
    /**
     * Worker `worker`'s failure report made at `at`: false when it is stale (the upstream was seen
     * answering since) and not applied.
     */
    down(u: Upstream, worker: number, failures: number, downUntil: number, at: number): boolean {
      const r = of(u);
      if (at < r.upAt) return false;
      r.downs.set(worker, { failures, downUntil, at });
      merge(u, r);
      return true;
    },
    /**
     * A worker saw the upstream answer at `at` (its "up", or a success it reported): clears the
     * failures reported before. True when that made the upstream healthy.
     */
    up(u: Upstream, at: number): boolean {
      const r = of(u);
      if (at > r.upAt) r.upAt = at;
      const was = u.failures > 0;
      for (const [worker, d] of r.downs) if (d.at <= at) r.downs.delete(worker);
      merge(u, r);
      return was && u.failures === 0;
    },
  };
}
