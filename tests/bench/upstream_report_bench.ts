/**
 * What a data worker's report of the upstreams that answered in the last second (`upstream_ok`,
 * one entry a site with traffic) costs the main thread: each entry found by a search of the site
 * list (the baseline, as a12e9f9 did) and by `upstreamOf` (an index built once a policy), for
 * 1,000 and 3,000 sites, in the same run; the ratio is the number to compare.
 *
 * ```sh
 * deno bench -A tests/bench/upstream_report_bench.ts
 * ```
 */
import { FakeClock } from "../../mod/core/clock.ts";
import { compilePolicy, upstreamOf } from "../../mod/data_plane/policy.ts";
import { siteInput } from "../_helpers/sites.ts";

for (const n of [1000, 3000]) {
  const sites = Array.from({ length: n }, (_, i) => ({
    ...siteInput({
      name: `s${i}`,
      hosts: [`s${i}.bench`],
      upstreams: [`http://10.0.${i >> 8}.${i & 255}:8080`],
    }),
    id: crypto.randomUUID(),
    tls: null,
    created_at: 0,
    updated_at: 0,
  }));
  const policy = compilePolicy(sites, new FakeClock(), 1);
  const report = policy.sites.map((s) => [s.id, s.pool.upstreams[0]!.origin] as const);
  Deno.bench(`a report naming ${n} sites, a search of the site list each`, {
    group: `${n}`,
    baseline: true,
  }, () => {
    for (const [id, origin] of report) {
      const site = policy.sites.find((s) => s.id === id);
      if (site?.pool.upstreams.find((u) => u.origin === origin) === undefined) throw new Error();
    }
  });
  Deno.bench(`a report naming ${n} sites, upstreamOf`, { group: `${n}` }, () => {
    for (const [id, origin] of report) {
      if (upstreamOf(policy, id, origin) === undefined) throw new Error();
    }
  });
}
