/** Schedules as the API takes them: cron expressions in UTC and intervals, and their next run. */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { AppError } from "../../../mod/core/errors.ts";
import { nextAfter, toSchedule } from "../../../mod/ops/schedule.ts";

Deno.test("cron schedules are evaluated in UTC; a bad expression is a 400 naming schedule.cron", () => {
  const s = toSchedule({ cron: "30 3 * * *" });
  assertEquals(nextAfter(s, Date.UTC(2026, 0, 1, 5)), Date.UTC(2026, 0, 2, 3, 30));
  assertEquals(nextAfter(s, Date.UTC(2026, 0, 1, 2)), Date.UTC(2026, 0, 1, 3, 30));
  assertEquals(toSchedule({ every: "90s" }), { every_ms: 90_000 });
  try {
    toSchedule({ cron: "61 * * * *" });
    throw new Error("accepted");
  } catch (err) {
    ok(err instanceof AppError);
    assertEquals(err.status, 400);
    assertEquals(err.details?.field, "schedule.cron");
  }
});
