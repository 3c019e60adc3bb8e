/**
 * What the data-plane workers send the main thread's single services (`app/data_workers.ts`):
 * their access-log records with the site counters, ALAP observations and API-discovery samples
 * they carry, and their upstreams' health, merged by when each report happened.
 */
import type { SiteCounterSet } from "../mod/data_plane/site_counters.ts";
import { addCounts } from "../mod/data_plane/site_counters.ts";
import { type SiteUpstreamHealth, upstreamOf } from "../mod/data_plane/policy.ts";
import type { Upstream } from "../mod/data_plane/upstream_pool.ts";
import { createUpstreamMirror } from "../mod/data_plane/upstream_mirror.ts";
import type { DataPlane } from "./data_plane.ts";
import type { FromWorker } from "./data_worker_protocol.ts";

type Message<T extends FromWorker["t"]> = Extract<FromWorker, { t: T }>;

export class WorkerInbox {
  readonly #dataPlane: DataPlane;
  readonly #counters: SiteCounterSet;
  readonly #health: SiteUpstreamHealth | undefined;
  /** The workers' upstream health, merged by the time of each report. */
  readonly #mirror = createUpstreamMirror();

  constructor(dataPlane: DataPlane, counters: SiteCounterSet, health?: SiteUpstreamHealth) {
    this.#dataPlane = dataPlane;
    this.#counters = counters;
    this.#health = health;
  }

  /** A batch of records: into the one access log, the counters, ALAP and API discovery. */
  records(m: Message<"records">): void {
    const dp = this.#dataPlane;
    addCounts(this.#counters, m.counts);
    dp.accessLog.pushRows({
      lines: m.lines,
      count: m.count,
      passLines: m.passLines,
      passCount: m.passCount,
      passSites: m.passSites,
      observed: m.events,
    });
    for (const [siteId, clientIp, traceId, inspection, policy] of m.alap) {
      dp.protection.alap.observe(
        siteId,
        { client_ip: clientIp, trace_id: traceId },
        inspection,
        policy,
      );
    }
    for (const sample of m.samples) dp.apisec.inventory.sample(sample);
  }

  /**
   * An upstream's health changed on worker `worker`: mirrored into the main thread's pool, which
   * `waf_upstream_up` reads, merged with the other workers' reports by when they happened
   * (`upstream_mirror.ts`).
   */
  upstream(worker: number, m: Message<"upstream">): void {
    const health = this.#health;
    const upstream = upstreamOf(this.#dataPlane.policy.current, m.site.id, m.upstream.origin);
    if (upstream === undefined) {
      health?.(m.site, m.upstream as Upstream, m.event);
    } else if (m.event === "up") {
      // Only when no other worker's later failure keeps it down.
      if (this.#mirror.up(upstream, m.seq)) health?.(m.site, upstream, "up");
    } else {
      const { failures, downUntil } = m.upstream;
      const applied = this.#mirror.down(upstream, worker, { failures, downUntil, seq: m.seq });
      // A stale failure (the upstream answered since) still counts as a failure.
      health?.(m.site, upstream, applied ? m.event : "failure");
    }
  }

  /** Upstreams that answered since a worker's last report. */
  upstreamOks(m: Message<"upstream_ok">): void {
    const current = this.#dataPlane.policy.current;
    for (const [siteId, origin, at, seq] of m.oks) {
      const upstream = upstreamOf(current, siteId, origin);
      if (upstream === undefined) continue;
      // Answered after a failure: up. The worker that failed may be gone (a restart starts
      // with a healthy pool and has no failure to recover from) or see no traffic for it,
      // and only it would have said "up".
      if (this.#mirror.answered(upstream, at, seq)) {
        const site = current.sites.find((x) => x.id === siteId)!;
        this.#health?.(site, upstream, "up");
      }
    }
  }
}
