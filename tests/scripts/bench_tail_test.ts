import { assertEquals, ok as assert } from "../_helpers/assert.ts";
import { parseGcTrace, tailReport } from "../../scripts/bench_tail.ts";

// A main isolate (0xa, most lines) and a worker's (0xb); the forced gc() ended 50 ms after start,
// at wall time 1,000,000 ms.
const TRACE =
  `[1:0xa]       50 ms: Mark-Compact 2.3 (2.8) -> 2.2 (2.8) MB, pooled: 0.0 MB, 5.48 / 0.00 ms (average mu = 0.888, current mu = 0.888) testing; GC in old space requested
ANCHOR 999999.0 1000000.0
[1:0xa]     1000 ms: Scavenge 30.0 (35.2) -> 20.0 (36.2) MB, pooled: 0.0 MB, 0.50 / 0.00 ms (average mu = 0.9, current mu = 0.9) allocation failure;
[1:0xb]     1100 ms: Scavenge 4.0 (5.2) -> 3.0 (6.2) MB, pooled: 0.0 MB, 0.40 / 0.00 ms (average mu = 0.9, current mu = 0.9) allocation failure;
[1:0xa]     2000 ms: Incremental Mark-Compact 45.2 (51.4) -> 32.7 (51.4) MB, pooled: 0.0 MB, 7.26 / 0.00 ms (+ 15.4 ms in 153 steps since start of marking, biggest step 4.4 ms, walltime since start of marking 42 ms) (average mu = 0.995, current mu = 0.997) finalize incremental marking via task; GC in old space requested
`;

Deno.test("the trace's collections of the main isolate, on the wall clock from the gc() anchor", () => {
  const events = parseGcTrace(TRACE);
  assertEquals(events, [
    { end: 1_000_950, pauseMs: 0.5, kind: "scavenge", afterMb: 20, markingMs: 0 },
    { end: 1_001_950, pauseMs: 7.26, kind: "mark-compact", afterMb: 32.7, markingMs: 42 },
  ]);
});

Deno.test("requests in flight in a mark-compact's window are counted, with their share of the slowest", () => {
  const gc = parseGcTrace(TRACE);
  // The window: 1,001,950 - 7.26 - 42 to 1,001,955. 100 requests, one a ms from 1,001,000; the
  // ones sent in the window take 20 ms, the others 1 ms.
  const requests = Array.from({ length: 1000 }, (_, i) => {
    const at = 1_001_000 + i;
    return { at, latency: at >= 1_001_901 && at < 1_001_955 ? 20 : 1 };
  });
  const t = tailReport(requests, gc);
  assertEquals(t.markCompacts, 1);
  assertEquals(t.p50, 1);
  assertEquals(t.p99, 20);
  // 54 slow ones sent in the window, and the 1 ms ones ending in it (sent at 1,001,900).
  assertEquals(Math.round(t.heldShare * 1000), 55);
  assertEquals(t.heldP50, 20);
  assertEquals(t.slowestInWindows, 1);
  assert(Number.isNaN(t.oldGrowthMbPerS), "one scavenge is no stretch to measure growth over");
});
