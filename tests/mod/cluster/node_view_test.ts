/** A node's totals since it joined, summed by the controller from its heartbeats' counters. */
import { assertEquals } from "../../_helpers/assert.ts";
import { addToTotals, type HeartbeatReport } from "../../../mod/cluster/node_view.ts";

const beat = (
  started_at: number,
  uptime_s: number,
  counters: Record<string, number>,
): HeartbeatReport => ({
  version: "0.1.0",
  uptime_s,
  policy_version: null,
  time: started_at + uptime_s * 1000,
  started_at,
  counters,
  health: {},
});

Deno.test("totals add what a node counted between heartbeats, and all of it after the node restarted", () => {
  const first = beat(1000, 5, { requests: 10, block: 2 });
  const t1 = addToTotals(null, first);
  assertEquals(t1, { requests: 10, block: 2 });
  const second = beat(1000, 10, { requests: 25, block: 3 });
  const t2 = addToTotals({ ...first, skew: 0, totals: t1 }, second);
  assertEquals(t2, { requests: 25, block: 3 });
  // The node restarted (a new start time): its counters began again from zero.
  const third = beat(90_000, 2, { requests: 4, block: 0 });
  const t3 = addToTotals({ ...second, skew: 0, totals: t2 }, third);
  assertEquals(t3, { requests: 29, block: 3 });
  // Reports without a start time (an older node): a restart shows as the uptime going back.
  const { started_at: _a, ...before } = beat(0, 60, { requests: 50 });
  const { started_at: _b, ...after } = beat(0, 1, { requests: 1 });
  assertEquals(addToTotals({ ...before, skew: 0, totals: { requests: 50 } }, after), {
    requests: 51,
  });
});
