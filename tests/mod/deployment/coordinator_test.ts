/** Which remote change notices wake the task scheduler, and how often the feed rebuilds. */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { changesTasks, debounce, debounceRetrying } from "../../../mod/deployment/coordinator.ts";

Deno.test("changesTasks() is true for ops_tasks and null only", () => {
  assertEquals(changesTasks(["ops_tasks"]), true);
  assertEquals(changesTasks(null), true);
  assertEquals(changesTasks(["ops_task_runs", "sites"]), false);
});

Deno.test("debounceRetrying() runs once per burst and tries a failed run again until it succeeds", async () => {
  let calls = 0;
  const failures: unknown[] = [];
  const run = debounceRetrying(
    () => {
      calls++;
      if (calls < 3) throw new Error("The management database is unavailable");
    },
    5,
    20,
    (err) => failures.push(err),
  );
  try {
    run();
    run();
    run();
    const until = Date.now() + 2_000;
    while (calls < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    assertEquals(calls, 3, "one run for the burst, two retries");
    assertEquals(failures.length, 2);
    // Succeeded: no further retry is armed.
    await new Promise((r) => setTimeout(r, 60));
    assertEquals(calls, 3);
  } finally {
    run.cancel();
  }
});

Deno.test("debounceRetrying().cancel() stops a pending retry", async () => {
  let calls = 0;
  const run = debounceRetrying(
    () => {
      calls++;
      throw new Error("down");
    },
    1,
    20,
    () => {},
  );
  run();
  while (calls === 0) await new Promise((r) => setTimeout(r, 5));
  run.cancel();
  await new Promise((r) => setTimeout(r, 60));
  assertEquals(calls, 1);
});

Deno.test("debounce() runs the first call of a burst at once, then at most once per window", async () => {
  const runs: number[] = [];
  const t0 = performance.now();
  const run = debounce(() => runs.push(performance.now() - t0), 200);
  try {
    run();
    run();
    // The calls of one turn share the first run, which does not wait for the window.
    await new Promise((r) => setTimeout(r, 50));
    assertEquals(runs.length, 1);
    ok(runs[0]! < 150, `the first run waited ${runs[0]} ms`);
    // Calls inside the window share one run at its end.
    run();
    run();
    assertEquals(runs.length, 1);
    const until = Date.now() + 2_000;
    while (runs.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    assertEquals(runs.length, 2);
    ok(runs[1]! - runs[0]! >= 150, "the second run waited for the window");
  } finally {
    run.cancel();
  }
});
