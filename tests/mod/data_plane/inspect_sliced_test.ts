import { assertEquals, ok } from "../../_helpers/assert.ts";
import { inspect, InspectionRun } from "../../../engine/mod.ts";
import type { EngineRequest } from "../../../engine/mod.ts";
import {
  DEADLINE_MS,
  inspectSliced,
  SLICED_FROM_BYTES,
} from "../../../mod/data_plane/inspect_sliced.ts";

const PROSE = "Our committee will select a venue for the union meeting; members can exec their " +
  "votes online. It's a fine plan, isn't it? ";

/** A text body of about `size` bytes of prose, with `tail` at its very end. */
function textBody(size: number, tail: string): EngineRequest {
  const body = PROSE.repeat(Math.ceil(size / PROSE.length)).slice(0, size) + tail;
  return {
    method: "POST",
    path: "/comments",
    query: "",
    headers: [["host", "shop.example"], ["content-type", "text/plain"]],
    body: new TextEncoder().encode(body),
  };
}

Deno.test("InspectionRun judges a long body a window per step, with inspect()'s verdict", () => {
  const req = textBody(1 << 20, " ;cat /etc/passwd");
  const run = new InspectionRun(req, { level: "balanced" });
  let steps = 0;
  while (run.step()) steps++;
  const sliced = run.result();
  const whole = inspect(req, { level: "balanced" });
  // 1 MiB in 16 KB windows 12 KB apart: about 86 steps, not one.
  ok(steps >= 80, `${steps} steps`);
  assertEquals(sliced.blocking?.ruleId, whole.blocking?.ruleId);
  assertEquals(sliced.blocking?.class, "rce");
  assertEquals(sliced.findings.length, whole.findings.length);
  assertEquals(sliced.truncated, false);
});

Deno.test("inspectSliced() lets a timer run while it judges a large body", async () => {
  const order: string[] = [];
  const timer = setTimeout(() => order.push("timer"), 0);
  const inspection = await inspectSliced(textBody(1 << 20, " ;cat /etc/passwd"), {
    level: "balanced",
  }, 0);
  order.push("inspected");
  clearTimeout(timer);
  assertEquals(order, ["timer", "inspected"]);
  assertEquals(inspection.blocking?.class, "rce");
});

Deno.test("inspectSliced() judges a small body in one go", async () => {
  const order: string[] = [];
  const fired = Promise.withResolvers<void>();
  const timer = setTimeout(() => {
    order.push("timer");
    fired.resolve();
  }, 0);
  const inspection = await inspectSliced(
    textBody(SLICED_FROM_BYTES / 2, " ;cat /etc/passwd"),
    { level: "balanced" },
    0,
  );
  order.push("inspected");
  await fired.promise;
  clearTimeout(timer);
  assertEquals(order, ["inspected", "timer"]);
  assertEquals(inspection.blocking?.class, "rce");
});

/** A clock that moves `step` milliseconds every time it is read. */
class SteppingClock {
  #now = 1_700_000_000_000;
  reads = 0;
  constructor(readonly step: number) {}
  now(): number {
    this.reads++;
    return this.#now += this.step;
  }
}

Deno.test("inspectSliced() stops a large body's inspection at its deadline on the injected clock", async () => {
  const req = textBody(1 << 20, " ;cat /etc/passwd");
  // Every window reads the clock once; a clock that moves a second a read passes the deadline
  // after a few windows, whatever the machine's speed.
  const clock = new SteppingClock(1000);
  const cut = await inspectSliced(req, { level: "balanced" }, { clock, deadlineMs: DEADLINE_MS });
  assertEquals([cut.blocking, cut.truncated], [undefined, true]);
  ok(clock.reads <= DEADLINE_MS / 1000 + 2, `${clock.reads} reads`);
  const idle = await inspectSliced(req, { level: "balanced" }, { clock: new SteppingClock(0) });
  assertEquals([idle.blocking?.class, idle.truncated], ["rce", false]);
});
