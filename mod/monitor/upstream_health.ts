/**
 * Upstream health as monitoring sees it: the pools' passive health changes become
 * `upstream.health` realtime events, `upstream.down` / `upstream.recovered` notifications (a
 * flapping upstream notifies at most once per cool-down) and the failure counts of the metrics.
 */
import type { Clock } from "../core/clock.ts";
import type { Notify } from "../core/notifications.ts";
import type { CompiledPolicy, SiteUpstreamHealth } from "../data_plane/policy.ts";
import type { EventBus } from "./event_bus.ts";
import type { Collector } from "./exposition.ts";

const NOTIFY_COOLDOWN_MS = 5 * 60_000;

export function createUpstreamHealth(
  deps: { bus: EventBus; clock: Clock; notify?: Notify },
) {
  /** Failures per `site id + origin`. */
  const failures = new Map<string, number>();
  /** Upstreams whose `down` was notified and not yet followed by `recovered`. */
  const notifiedDown = new Map<string, number>();

  const hook: SiteUpstreamHealth = (site, upstream, event) => {
    const key = `${site.id} ${upstream.origin}`;
    if (event !== "up") failures.set(key, (failures.get(key) ?? 0) + 1);
    if (event === "failure") return;
    const state = event === "down" ? "down" : "up";
    deps.bus.publish("upstream.health", {
      site_id: site.id,
      site: site.name,
      upstream: upstream.origin,
      state,
      failures: upstream.failures,
    }, site);
    const now = deps.clock.now();
    if (event === "down") {
      const last = notifiedDown.get(key);
      if (last !== undefined && now - last < NOTIFY_COOLDOWN_MS) return;
      notifiedDown.set(key, now);
      deps.notify?.({
        level: "warning",
        kind: "upstream.down",
        title: `Upstream ${upstream.origin} of ${site.name} is down`,
        body:
          `Requests to ${upstream.origin} failed; the site's other upstreams (if any) take its traffic until it answers again.`,
        data: { site_id: site.id, site: site.name, upstream: upstream.origin },
        link: "/console/dashboard",
      });
    } else if (notifiedDown.has(key)) {
      notifiedDown.delete(key);
      deps.notify?.({
        level: "info",
        kind: "upstream.recovered",
        title: `Upstream ${upstream.origin} of ${site.name} recovered`,
        body: `${upstream.origin} answers again.`,
        data: { site_id: site.id, site: site.name, upstream: upstream.origin },
        link: "/console/dashboard",
      });
    }
  };

  const collector = (policy: { readonly current: CompiledPolicy }): Collector => (out) => {
    const all = policy.current.sites.flatMap((site) =>
      site.pool.upstreams.map((u) => ({ site, u, labels: { site: site.name, upstream: u.origin } }))
    );
    out.family("waf_upstream_up", "gauge", "1 when the upstream is healthy, 0 while it cools down");
    for (const { u, labels } of all) {
      out.sample("waf_upstream_up", labels, u.failures === 0 ? 1 : 0);
    }
    out.family("waf_upstream_failures_total", "counter", "Failed attempts to reach an upstream");
    for (const { site, u, labels } of all) {
      out.sample(
        "waf_upstream_failures_total",
        labels,
        failures.get(`${site.id} ${u.origin}`) ?? 0,
      );
    }
  };

  return { hook, collector };
}
