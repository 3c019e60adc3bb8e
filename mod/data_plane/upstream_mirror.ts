/**
 * The main thread's copy of upstream health when data workers serve (`app/data_workers.ts`):
 * each worker has its own pool and reports its failures ("down", "failure") and recoveries
 * ("up", and the successes it saw), each stamped with where it falls in the process's order of
 * health events (`healthOrder` in `upstream_pool.ts`: a counter in shared memory, not the wall
 * clock, whose backward step hid a later success behind an earlier failure). The copy is what the
 * health API and `waf_upstream_up` read.
 *
 * The rule: reports are merged by their stamps, not by the order they arrive in (two workers'
 * messages interleave freely). A success stamped s came after every failure stamped up to s.
 * - A failure report stays in force, per worker (its latest replaces its earlier one), until
 *   the upstream is seen answering after it: a success reported by any worker, stamped later.
 * - A success clears every failure reported before it (of any worker); a failure reported after
 *   it stays, so one worker's stale "up" never hides another's "down".
 * - A failure reported before the latest success arrives stale and is not applied.
 * - The upstream's `failures` and `downUntil` are the worst of the failures in force (the most
 *   consecutive failures, the latest cool-down end); none in force: 0 and 0, healthy.
 */
import type { Upstream } from "./upstream_pool.ts";

/** A worker's failure report: its consecutive failures, cool-down end and stamp. */
export interface DownReport {
  readonly failures: number;
  readonly downUntil: number;
  readonly seq: number;
}

interface Reports {
  /** Failure reports in force, by worker. */
  readonly downs: Map<number, DownReport>;
  /** The latest stamp of a success a worker saw. */
  upSeq: number;
}

export function createUpstreamMirror() {
  const reports = new WeakMap<Upstream, Reports>();
  const of = (u: Upstream): Reports => {
    let r = reports.get(u);
    if (r === undefined) reports.set(u, r = { downs: new Map(), upSeq: -Infinity });
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
     * Worker `worker`'s failure report: false when it is stale (the upstream was seen answering
     * since its stamp) and not applied.
     */
    down(u: Upstream, worker: number, report: DownReport): boolean {
      const r = of(u);
      if (report.seq <= r.upSeq) return false;
      r.downs.set(worker, report);
      merge(u, r);
      return true;
    },
    /**
     * A worker saw the upstream answer, stamped `seq` (its "up", or a success it reported):
     * clears the failures reported before. True when that made the upstream healthy.
     */
    up(u: Upstream, seq: number): boolean {
      const r = of(u);
      if (seq > r.upSeq) r.upSeq = seq;
      const was = u.failures > 0;
      for (const [worker, d] of r.downs) if (d.seq <= seq) r.downs.delete(worker);
      merge(u, r);
      return was && u.failures === 0;
    },
    /**
     * A worker's report that the upstream answered at wall-clock time `at`, stamped `seq`: the
     * latest by stamp is the one shown (`last_ok_at`), even when its time is earlier (the clock
     * stepped back). Then as `up`.
     */
    answered(u: Upstream, at: number, seq: number): boolean {
      if (seq >= u.okSeq) {
        u.okSeq = seq;
        u.lastOkAt = at;
      }
      return this.up(u, seq);
    },
  };
}

/**
 * A data worker's side of its once-a-second success report: whether `u` answered since it was
 * last reported. By the answer's time and stamp both, any change: a success after a backward
 * step of the wall clock has an earlier time, and was not reported when a later time was asked.
 */
export function createOkReports() {
  const reported = new WeakMap<Upstream, { at: number; seq: number }>();
  return {
    moved(u: Upstream): boolean {
      const last = reported.get(u);
      if (u.lastOkAt === 0 || (last?.at === u.lastOkAt && last.seq === u.okSeq)) return false;
      reported.set(u, { at: u.lastOkAt, seq: u.okSeq });
      return true;
    },
  };
}
