/**
 * The main thread's mirror of the upstream health the data workers report: merged by the time
 * of each report, not by the order the messages arrive in, so one worker's stale "up" does not
 * hide another's "down".
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { createUpstreamMirror } from "../../../mod/data_plane/upstream_mirror.ts";
import type { Upstream } from "../../../mod/data_plane/upstream_pool.ts";

const upstream = (): Upstream => ({
  origin: "http://127.0.0.1:1",
  wsOrigin: "ws://127.0.0.1:1",
  hostname: "127.0.0.1",
  port: 1,
  failures: 0,
  downUntil: 0,
  lastOkAt: 0,
});
const health = (u: Upstream) => [u.failures, u.downUntil];

Deno.test("a worker's up made before another worker's down does not clear that down", () => {
  const m = createUpstreamMirror();
  const u = upstream();
  assertEquals(m.down(u, 1, 1, 1100, 100), true);
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
  assertEquals(m.down(u, 2, 1, 1150, 150), false);
  assertEquals(health(u), [0, 0]);
  assertEquals(m.down(u, 2, 1, 1250, 250), true);
  assertEquals(health(u), [1, 1250]);
});

Deno.test("downs of several workers merge to the worst, and a success clears only those before it", () => {
  const m = createUpstreamMirror();
  const u = upstream();
  m.down(u, 1, 1, 1100, 100);
  m.down(u, 2, 3, 4120, 120);
  assertEquals(health(u), [3, 4120]);
  // Worker 1 sees a success at 110: its own failure is over, worker 2's at 120 is not.
  assertEquals(m.up(u, 110), false);
  assertEquals(health(u), [3, 4120]);
  // A worker's later report replaces its earlier one.
  m.down(u, 2, 4, 8130, 130);
  assertEquals(health(u), [4, 8130]);
  assertEquals(m.up(u, 140), true);
  assertEquals(health(u), [0, 0]);
});
