import { assertEquals, ok } from "../../_helpers/assert.ts";
import { createRateLimiter } from "../../../engine/rate_limit.ts";
import { allocateSharedState, openSharedState } from "../../../mod/data_plane/shared_state.ts";

const small = () => allocateSharedState({ limitBuckets: 64, nonceBuckets: 64 });

Deno.test("a shared limiter decides exactly as the engine's limiter on the same requests", () => {
  const opts = { requests: 5, windowMs: 10_000, burst: 2 };
  const engine = createRateLimiter(opts);
  const shared = openSharedState(small(), 1).limiter("global/ip", opts);
  let now = 1_700_000_000_000;
  for (let i = 0; i < 200; i++) {
    now += (i * 7919) % 900;
    const key = `198.51.100.${i % 3}`;
    assertEquals(shared.hit(key, now), engine.hit(key, now), `request ${i}`);
  }
});

Deno.test("two threads' views of one shared state count against one limit", () => {
  const buffers = small();
  const a = openSharedState(buffers, 1).limiter("route/r1", {
    requests: 4,
    windowMs: 60_000,
    burst: 0,
  });
  const b = openSharedState(buffers, 2).limiter("route/r1", {
    requests: 4,
    windowMs: 60_000,
    burst: 0,
  });
  const other = openSharedState(buffers, 2).limiter("route/r2", {
    requests: 4,
    windowMs: 60_000,
    burst: 0,
  });
  const now = 1_700_000_000_000;
  const allowed = [a, b, a, b, a, b].map((l) => l.hit("203.0.113.9", now).allowed);
  assertEquals(allowed, [true, true, true, true, false, false]);
  ok(other.hit("203.0.113.9", now).allowed, "another limiter's name counts apart");
});

Deno.test("a used nonce is refused by every view until it expires; a probe stores nothing", () => {
  const buffers = small();
  const one = openSharedState(buffers, 1).nonces;
  const two = openSharedState(buffers, 2).nonces;
  const now = 1_700_000_000_000;
  assertEquals(one.has("n1", now), false);
  assertEquals(one.size(), 0, "has() does not claim a slot");
  assertEquals(one.add("n1", now + 60_000, now), true);
  assertEquals(two.add("n1", now + 60_000, now), false, "the other thread loses the race");
  assertEquals(two.has("n1", now), true);
  assertEquals(two.has("n1", now + 61_000), false, "expired");
  assertEquals(two.add("n1", now + 200_000, now + 61_000), true);
});

Deno.test("memory stays fixed: a full bucket forgets its least recently used key", () => {
  const state = openSharedState(allocateSharedState({ limitBuckets: 1, nonceBuckets: 1 }), 1);
  const l = state.limiter("global/ip", { requests: 1, windowMs: 60_000, burst: 0 });
  const now = 1_700_000_000_000;
  for (let i = 0; i < 20; i++) l.hit(`k${i}`, now + i * 1000);
  assertEquals(l.size(), 8, "one bucket of eight slots");
  assertEquals(l.hit("k19", now + 20_000).allowed, false, "the newest key is still counted");
  assertEquals(l.hit("k0", now + 20_000).allowed, true, "the oldest was forgotten");
});

Deno.test("locks held by a dead thread are released for the others", () => {
  const buffers = allocateSharedState({ limitBuckets: 1, nonceBuckets: 1 });
  // Worker 3 died mid-update: its id is left in the one bucket's lock word.
  new Int32Array(buffers.limits, 0, 1)[0] = 3;
  const main = openSharedState(buffers, 0);
  assertEquals(main.clearLocksOf(3), 1);
  const l = openSharedState(buffers, 1).limiter("g", { requests: 1, windowMs: 1000, burst: 0 });
  assertEquals(l.hit("k", 1_700_000_000_000).allowed, true);
});
