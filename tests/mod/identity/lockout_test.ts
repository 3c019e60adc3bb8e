import { assertEquals } from "../../_helpers/assert.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createLockout } from "../../../mod/identity/lockout.ts";

const options = { threshold: 3, baseLockMs: 30_000, maxLockMs: 120_000, windowMs: 600_000 };

Deno.test("lockout allows failures up to the threshold, then locks", () => {
  const clock = new FakeClock();
  const l = createLockout(clock, options);
  l.fail(["ip:a"]);
  l.fail(["ip:a"]);
  assertEquals(l.retryAfter(["ip:a"]), 0);
  l.fail(["ip:a"]);
  assertEquals(l.retryAfter(["ip:a"]), 30);
  assertEquals(l.retryAfter(["ip:b"]), 0);
});

Deno.test("lockout doubles the lock with each further failure up to the maximum", () => {
  const clock = new FakeClock();
  const l = createLockout(clock, options);
  for (let i = 0; i < 3; i++) l.fail(["k"]);
  assertEquals(l.retryAfter(["k"]), 30);
  l.fail(["k"]);
  assertEquals(l.retryAfter(["k"]), 60);
  l.fail(["k"]);
  assertEquals(l.retryAfter(["k"]), 120);
  l.fail(["k"]);
  assertEquals(l.retryAfter(["k"]), 120);
});

Deno.test("lockout releases after the lock and forgets after the window", () => {
  const clock = new FakeClock();
  const l = createLockout(clock, options);
  for (let i = 0; i < 3; i++) l.fail(["k"]);
  clock.advance(30_000);
  assertEquals(l.retryAfter(["k"]), 0);
  assertEquals(l.failures("k"), 3);
  clock.advance(600_001);
  assertEquals(l.failures("k"), 0);
});

Deno.test("lockout reports the longest wait of several keys and reset() forgets one", () => {
  const clock = new FakeClock();
  const l = createLockout(clock, options);
  for (let i = 0; i < 4; i++) l.fail(["user:x"]);
  for (let i = 0; i < 3; i++) l.fail(["ip:y"]);
  assertEquals(l.retryAfter(["ip:y", "user:x"]), 60);
  l.reset("user:x");
  assertEquals(l.retryAfter(["ip:y", "user:x"]), 30);
});

Deno.test("lockout keeps at most maxKeys entries", () => {
  const clock = new FakeClock();
  const l = createLockout(clock, { ...options, maxKeys: 2 });
  l.fail(["a"]);
  l.fail(["b"]);
  l.fail(["c"]);
  assertEquals(l.failures("a"), 0);
  assertEquals(l.failures("c"), 1);
});
