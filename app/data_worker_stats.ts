/**
 * The data-plane workers' figures merged on the main thread (`app/data_workers.ts`): their
 * connection fronts' counters added to the process's, their edge caches' counters added up, and
 * the per-worker status and Prometheus families.
 */
import {
  CLOSE_REASONS,
  type ListenerConnections,
  REFUSE_REASONS,
} from "../mod/core/connection_stats.ts";
import type { Exposition } from "../mod/monitor/exposition.ts";
import type { CacheStats } from "./data_worker_protocol.ts";
import type { WorkerSlot } from "./data_worker_slot.ts";

/** One worker as `status()` shows it. */
export interface WorkerStatus {
  readonly index: number;
  readonly live: boolean;
  readonly version: number;
  readonly requests: number;
  readonly restarts: number;
}

/** Adds what a worker's front counted since its last report (`before`) to the process's. */
export function addConnections(
  into: ListenerConnections,
  before: ListenerConnections | undefined,
  now: ListenerConnections,
): void {
  into.open += now.open - (before?.open ?? 0);
  into.accepted += now.accepted - (before?.accepted ?? 0);
  into.acceptErrors += now.acceptErrors - (before?.acceptErrors ?? 0);
  for (const r of REFUSE_REASONS) into.refused[r] += now.refused[r] - (before?.refused[r] ?? 0);
  for (const r of CLOSE_REASONS) into.closed[r] += now.closed[r] - (before?.closed[r] ?? 0);
}

/** The main thread's cache counters with every worker's last report added. */
export function sumCacheStats(local: CacheStats, slots: readonly WorkerSlot[]): CacheStats {
  const sum = { ...local };
  for (const s of slots) {
    if (!s.cache) continue;
    sum.entries += s.cache.entries;
    sum.bytes += s.cache.bytes;
    sum.hits += s.cache.hits;
    sum.misses += s.cache.misses;
    sum.max_bytes = Math.max(sum.max_bytes, s.cache.max_bytes);
  }
  return sum;
}

/** Per worker: index, serving or not, policy version, requests served, restarts. */
export function workerStatus(slots: readonly WorkerSlot[]): WorkerStatus[] {
  return slots.map((s) => ({
    index: s.index,
    live: s.live,
    version: s.version,
    requests: s.requests,
    restarts: s.restarts,
  }));
}

/** The families, each with a sample per worker. */
const FAMILIES: ReadonlyArray<
  readonly [string, "counter" | "gauge", string, (s: WorkerSlot) => number]
> = [
  [
    "waf_data_worker_requests_total",
    "counter",
    "Requests each data-plane worker finished",
    (s) => s.requests,
  ],
  [
    "waf_data_worker_restarts_total",
    "counter",
    "Restarts of each data-plane worker after a crash",
    (s) => s.restarts,
  ],
  [
    "waf_data_worker_restart_failures_total",
    "counter",
    "Failed attempts to start a crashed data-plane worker again (each is retried)",
    (s) => s.restartFailures,
  ],
  ["waf_data_worker_up", "gauge", "1 while the data-plane worker serves", (s) => Number(s.live)],
  [
    "waf_data_worker_policy_version",
    "gauge",
    "Policy version the data-plane worker enforces",
    (s) => s.version,
  ],
];

/** Prometheus: requests, restarts and state per worker (how evenly the kernel spreads). */
export function collectWorkers(out: Exposition, slots: readonly WorkerSlot[]): void {
  for (const [name, type, help, of] of FAMILIES) {
    out.family(name, type, help);
    for (const s of slots) out.sample(name, { worker: String(s.index) }, of(s));
  }
}
