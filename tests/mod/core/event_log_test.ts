import { assertEquals, ok } from "../../_helpers/assert.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createEventLog } from "../../../mod/core/event_log.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";

Deno.test("each kind writes its burst at once, then at its rate, and says how many it left out", () => {
  const clock = new FakeClock(0);
  const logger = createMemoryLogger();
  const events = createEventLog({
    logger,
    clock,
    buckets: { block: { burst: 3, perSecond: 1 } },
  });
  for (let i = 0; i < 1000; i++) events.event("block", "request blocked", { n: i });
  assertEquals(logger.lines.length, 3, "a flood of 1000 writes the burst only");
  // Another kind has its own bucket.
  ok(events.event("policy_swap", "policy swapped"));
  clock.advance(1000);
  ok(events.event("block", "request blocked", { n: 1000 }));
  const last = logger.lines[logger.lines.length - 1]!;
  ok(last.includes(" INFO  request blocked"), last);
  ok(last.includes("event=block") && last.includes("suppressed=997"), last);
  assertEquals(events.event("block", "request blocked"), false, "no token left");
  clock.advance(10_000);
  for (let i = 0; i < 5; i++) events.event("block", "request blocked");
  assertEquals(logger.lines.length, 8, "refilled up to the burst, not beyond");
});
