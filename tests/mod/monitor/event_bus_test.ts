import { assertEquals } from "../../_helpers/assert.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { type BusEvent, createEventBus } from "../../../mod/monitor/event_bus.ts";

Deno.test("events fan out right after the turn that published them, in order, in one pass", async () => {
  const bus = createEventBus({ clock: new FakeClock(Date.UTC(2026, 0, 10)) });
  const seen: string[] = [];
  bus.listen((e: BusEvent) => seen.push(e.kind));
  bus.publish("ai.approval", { n: 1 });
  bus.publish("ai.approval", { n: 2 });
  // Off the publisher's path: nothing during the turn that published.
  assertEquals(seen, []);
  // Right after the turn (a check-phase callback), not a millisecond timer later: a zero
  // `setTimeout` is a Node-style `Timeout` in Deno 2, dear for a fan-out per blocked request.
  await new Promise((r) => setImmediate(r));
  assertEquals(seen, ["ai.approval", "ai.approval"]);
  assertEquals(bus.stats().published, { "ai.approval": 2 });
});
