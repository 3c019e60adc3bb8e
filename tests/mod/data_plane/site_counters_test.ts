import { assertEquals } from "../../_helpers/assert.ts";
import { record } from "../../_helpers/records.ts";
import {
  addCounts,
  BLOCK_CLASSES,
  SiteCounterSet,
  takeCounts,
} from "../../../mod/data_plane/site_counters.ts";

Deno.test("a worker's counts, taken and added on the main thread, equal counting there", () => {
  const worker = new SiteCounterSet();
  const direct = new SiteCounterSet();
  const main = new SiteCounterSet();
  const requests = [
    record({ site_id: "s1", site: "shop", status: 200 }),
    record({
      site_id: "s1",
      site: "shop",
      status: 403,
      action: "block",
      chain: [{ check: "ip_list", result: "block", us: 3 }],
    }),
    record({ site_id: "s2", site: "blog", status: 502 }),
    record({ site_id: null, site: null, status: 404 }),
  ];
  const count = (set: SiteCounterSet) => {
    for (const r of requests) {
      const c = r.site_id === null ? set.none : set.forSite(r.site_id, r.site!);
      c.count(r, 1200, r.status === 502 ? null : 800);
      c.inspection.observe(40);
    }
  };
  count(direct);
  count(worker);
  addCounts(main, takeCounts(worker));
  // Taken means zeroed: nothing is sent twice.
  assertEquals(takeCounts(worker), []);
  count(worker);
  count(direct);
  addCounts(main, takeCounts(worker));
  const view = (set: SiteCounterSet) =>
    [...set.all()].map((c) => ({
      id: c.id,
      name: c.name,
      requests: [...c.requests],
      blocks: [...c.blocks].flatMap((n, i) => n > 0 ? [[BLOCK_CLASSES[i], n]] : []),
      latency: [...c.latency.values],
      upstream: [...c.upstreamLatency.values],
      inspection: [...c.inspection.values],
    }));
  assertEquals(view(main), view(direct));
});
