import { assertEquals } from "../../_helpers/assert.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { BASE_COOLDOWN_MS, createUpstreamPool } from "../../../mod/data_plane/upstream_pool.ts";

const A = "http://127.0.0.1:1001";
const B = "http://127.0.0.1:1002";
const C = "http://127.0.0.1:1003";

Deno.test("createUpstreamPool() takes upstreams in turn", () => {
  const pool = createUpstreamPool([A, B, C], new FakeClock());
  const picks = Array.from({ length: 6 }, () => pool.pick().origin);
  assertEquals(picks, [A, B, C, A, B, C]);
});

Deno.test("a failing upstream is skipped until its cool-down ends", () => {
  const clock = new FakeClock();
  const pool = createUpstreamPool([A, B], clock);
  const a = pool.upstreams[0]!;
  pool.fail(a);
  assertEquals([pool.pick().origin, pool.pick().origin, pool.pick().origin], [B, B, B]);
  clock.advance(BASE_COOLDOWN_MS);
  const after = new Set([pool.pick().origin, pool.pick().origin]);
  assertEquals(after, new Set([A, B]));
});

Deno.test("consecutive failures double the cool-down and one success resets it", () => {
  const clock = new FakeClock();
  const pool = createUpstreamPool([A, B], clock);
  const a = pool.upstreams[0]!;
  pool.fail(a);
  pool.fail(a);
  assertEquals(a.downUntil - clock.now(), BASE_COOLDOWN_MS * 2);
  pool.ok(a);
  assertEquals(a.failures, 0);
  assertEquals(a.downUntil, 0);
});

Deno.test("when every upstream is cooling down the one that recovers first is tried", () => {
  const clock = new FakeClock();
  const pool = createUpstreamPool([A, B], clock);
  pool.fail(pool.upstreams[0]!);
  pool.fail(pool.upstreams[0]!);
  pool.fail(pool.upstreams[1]!);
  assertEquals(pool.pick().origin, B);
});

Deno.test("pick() avoids the upstream that just failed when another exists", () => {
  const pool = createUpstreamPool([A, B], new FakeClock());
  const first = pool.pick();
  assertEquals(pool.pick(first).origin === first.origin, false);
});
