import { assertEquals, ok } from "../_helpers/assert.ts";
import { createRateLimiter } from "../../engine/rate_limit.ts";

const T0 = 1_000_000_000;

Deno.test("the limiter allows requests up to the rate plus burst, then refuses", () => {
  const rl = createRateLimiter({ requests: 5, windowMs: 1000, burst: 2 });
  for (let i = 0; i < 7; i++) ok(rl.hit("a", T0 + i).allowed, `request ${i}`);
  const denied = rl.hit("a", T0 + 10);
  ok(!denied.allowed);
  ok(denied.retryAfterMs > 0);
  ok(rl.hit("b", T0 + 10).allowed, "other keys are independent");
});

Deno.test("the window slides: a full previous window still counts just after the boundary", () => {
  const rl = createRateLimiter({ requests: 10, windowMs: 1000, burst: 0 });
  for (let i = 0; i < 10; i++) ok(rl.hit("a", T0 + 900 + i).allowed);
  // 100 ms into the next window, 90% of the previous ten still weigh: nine, so only one fits.
  ok(rl.hit("a", T0 + 1100).allowed);
  ok(!rl.hit("a", T0 + 1100).allowed, "a fixed window would have allowed ten more");
  // Half way through, five of the previous ten weigh: four more fit (1 + 4 + 5 = 10).
  let allowed = 0;
  for (let i = 0; i < 10; i++) if (rl.hit("a", T0 + 1500).allowed) allowed++;
  assertEquals(allowed, 4);
});

Deno.test("Retry-After points at the moment one more request fits", () => {
  const rl = createRateLimiter({ requests: 4, windowMs: 1000, burst: 0 });
  for (let i = 0; i < 4; i++) rl.hit("a", T0);
  const d = rl.hit("a", T0 + 200);
  ok(!d.allowed);
  const at = T0 + 200 + d.retryAfterMs;
  ok(!rl.hit("a", at - 2).allowed, "just before Retry-After it is still refused");
  ok(rl.hit("a", at).allowed, "at Retry-After it is allowed");
});

Deno.test("the limiter forgets a key after two idle windows", () => {
  const rl = createRateLimiter({ requests: 1, windowMs: 1000, burst: 0 });
  ok(rl.hit("a", T0).allowed);
  ok(!rl.hit("a", T0 + 10).allowed);
  ok(rl.hit("a", T0 + 2000).allowed);
});

Deno.test("tracked keys stay under the cap by evicting the least recently used", () => {
  const rl = createRateLimiter({
    requests: 1,
    windowMs: 60_000,
    burst: 0,
    maxKeys: 100,
    shards: 1,
  });
  rl.hit("keep", T0);
  for (let i = 0; i < 1000; i++) {
    rl.hit(`k${i}`, T0);
    if (i % 50 === 0) rl.hit("keep", T0); // touched, so never the least recently used
  }
  assertEquals(rl.size(), 100);
  ok(!rl.hit("keep", T0).allowed, "the recently used key kept its count");
  ok(rl.hit("k0", T0).allowed, "an evicted key starts again");
});

Deno.test("sharded limiters keep the total under the cap", () => {
  const rl = createRateLimiter({ requests: 1, windowMs: 1000, burst: 0, maxKeys: 1600 });
  for (let i = 0; i < 50_000; i++) rl.hit(`10.0.${i >> 8}.${i & 255}`, T0);
  ok(rl.size() <= 1600);
});
