/** The access log's counters in the Prometheus exposition: lost records and sampled ones by site. */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { accessLogSamples } from "../../../mod/monitor/metrics.ts";
import { Exposition } from "../../../mod/monitor/exposition.ts";

Deno.test("the access log's sampled records are a counter per site, the lost ones per site and verdict", () => {
  const out = new Exposition();
  accessLogSamples(out, {
    queued: 3,
    written: 120,
    dropped: 2,
    dropped_verdicts: 1,
    dropped_sites: { shop: { pass: 1 }, "": { block: 1 } },
    sampled: 45,
    sampled_sites: { shop: 40, "": 5 },
    sample_every: 16,
    spilled: 30,
    spill_rows: 7,
    spill_bytes: 4096,
    pruned: 0,
    writer_escalations: 0,
    writer_deescalations: 0,
    sinks: [],
  });
  const text = out.text();
  const lines = text.split("\n");
  ok(lines.includes("# TYPE waf_access_log_sampled_total counter"), text);
  ok(lines.includes('waf_access_log_sampled_total{site="shop"} 40'), text);
  ok(lines.includes('waf_access_log_sampled_total{site="_unmatched"} 5'), text);
  ok(lines.includes("waf_access_log_dropped_verdicts_total 1"), text);
  ok(lines.includes('waf_access_log_dropped_total{site="shop",verdict="pass"} 1'), text);
  ok(lines.includes('waf_access_log_dropped_total{site="_unmatched",verdict="block"} 1'), text);
  ok(lines.includes("waf_access_log_sample_every 16"), text);
  ok(lines.includes("waf_access_log_spilled_total 30"), text);
  ok(lines.includes("waf_access_log_spill_rows 7"), text);
  assertEquals(lines.filter((l) => l.startsWith("waf_access_log_sampled_total")).length, 2);
});
