import { assertEquals, ok } from "../../_helpers/assert.ts";
import { inspect, InspectionRun } from "../../../engine/mod.ts";
import type { EngineRequest } from "../../../engine/mod.ts";
import { inspectSliced, SLICED_FROM_BYTES } from "../../../mod/data_plane/inspect_sliced.ts";

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
