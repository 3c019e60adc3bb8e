/**
 * The main thread's mirror of the upstream health the data workers report: merged by the time
 * of each report, not by the order the messages arrive in, so one worker's stale "up" does not
 * hide another's "down".
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { createOkReports, createUpstreamMirror } from "../../../mod/data_plane/upstream_mirror.ts";
import { createUpstreamPool, type Upstream } from "../../../mod/data_plane/upstream_pool.ts";
import { FakeClock } from "../../../mod/core/clock.ts";

const upstream = (): Upstream => ({
  origin: "http://127.0.0.1:1",
  wsOrigin: "ws://127.0.0.1:1",
  hostname: "127.0.0.1",
  port: 1,
  failures: 0,
  downUntil: 0,
  lastOkAt: 0,
  okSeq: 0,
  failedSeq: 0,
});
const health = (u: Upstream) => [u.failures, u.downUntil];

Deno.test("a worker's up made before another worker's down does not clear that down", () => {
  const m = createUpstreamMirror();
  const u = upstream();
  assertEquals(m.down(u, 1, { failures: 1, downUntil: 1100, seq: 100 }), true);
  assertEquals(health(u), [1, 1100]);
  // Worker 2's success at 90 arrives after worker 1's failure at 100: stale.
  assertEquals(m.up(u, 90), false);
  assertEquals(health(u), [1, 1100]);
  // A success after the failure: the upstream answered since, up.
  assertEquals(m.up(u, 110), true);
  assertEquals(health(u), [0, 0]);
});

Deno.test("a down reported before the last success arrives stale and does not mark the upstream down", () => {
  const m = createUpstreamMirror();
  const u = upstream();
  m.up(u, 200);
  assertEquals(m.down(u, 2, { failures: 1, downUntil: 1150, seq: 150 }), false);
  assertEquals(health(u), [0, 0]);
  assertEquals(m.down(u, 2, { failures: 1, downUntil: 1250, seq: 250 }), true);
  assertEquals(health(u), [1, 1250]);
});

Deno.test("downs of several workers merge to the worst, and a success clears only those before it", () => {
  const m = createUpstreamMirror();
  const u = upstream();
  m.down(u, 1, { failures: 1, downUntil: 1100, seq: 100 });
  m.down(u, 2, { failures: 3, downUntil: 4120, seq: 120 });
  assertEquals(health(u), [3, 4120]);
  // Worker 1 sees a success at 110: its own failure is over, worker 2's at 120 is not.
  assertEquals(m.up(u, 110), false);
  assertEquals(health(u), [3, 4120]);
  // A worker's later report replaces its earlier one.
  m.down(u, 2, { failures: 4, downUntil: 8130, seq: 130 });
  assertEquals(health(u), [4, 8130]);
  assertEquals(m.up(u, 140), true);
  assertEquals(health(u), [0, 0]);
});

const HOUR = 3_600_000;

/** Two workers' pools of one upstream on one clock, and the main thread's mirror of it. */
function twoWorkers() {
  const clock = new FakeClock();
  const poolA = createUpstreamPool(["http://127.0.0.1:1"], clock);
  const poolB = createUpstreamPool(["http://127.0.0.1:1"], clock);
  const [a, b] = [poolA.upstreams[0]!, poolB.upstreams[0]!];
  return { clock, poolA, poolB, a, b, m: createUpstreamMirror(), u: upstream() };
}

Deno.test("a success after a failure marks the upstream up though the wall clock stepped back between them", () => {
  const { clock, poolA, poolB, a, b, m, u } = twoWorkers();
  poolA.fail(a);
  assertEquals(
    m.down(u, 1, { failures: a.failures, downUntil: a.downUntil, seq: a.failedSeq }),
    true,
  );
  // NTP steps the clock back an hour; worker 2 then sees the upstream answer.
  clock.advance(-HOUR);
  poolB.ok(b);
  assertEquals(m.up(u, b.okSeq), true);
  assertEquals(health(u), [0, 0]);
});

Deno.test("a failure after a success stays in force though the wall clock stepped back between them", () => {
  const { clock, poolA, poolB, a, b, m, u } = twoWorkers();
  poolB.ok(b);
  clock.advance(-HOUR);
  poolA.fail(a);
  // Worker 2's once-a-second success report arrives after worker 1's failure: it is older.
  assertEquals(
    m.down(u, 1, { failures: a.failures, downUntil: a.downUntil, seq: a.failedSeq }),
    true,
  );
  assertEquals(m.up(u, b.okSeq), false);
  assertEquals(health(u), [1, a.downUntil]);
});

Deno.test("a worker reports a success made after the wall clock stepped back", () => {
  const clock = new FakeClock();
  const pool = createUpstreamPool(["http://127.0.0.1:1"], clock);
  const u = pool.upstreams[0]!;
  const reports = createOkReports();
  pool.ok(u);
  assertEquals(reports.moved(u), true);
  assertEquals(reports.moved(u), false);
  clock.advance(-HOUR);
  pool.ok(u);
  assertEquals(reports.moved(u), true, "a success at an earlier wall-clock time is new");
  assertEquals(reports.moved(u), false);
});
