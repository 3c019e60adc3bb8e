import { assertEquals, ok as assert } from "../../_helpers/assert.ts";
import { EVENT_LOOP_SLICE_NS, shortenThreadSlice } from "../../../mod/core/thread_slice.ts";

/** The calling thread's slice in ns, as the scheduler reports it. */
function ownSlice(): number {
  const sched = Deno.readTextFileSync("/proc/thread-self/sched");
  return Number(/se\.slice\s+:\s+(\d+)/.exec(sched)![1]);
}

Deno.test("the event loop's thread gets a short slice, threads started after it do not", async () => {
  const before = ownSlice();
  assert(before > EVENT_LOOP_SLICE_NS, `the default slice (${before} ns) is longer`);
  assertEquals(shortenThreadSlice(), true);
  assertEquals(ownSlice(), EVENT_LOOP_SLICE_NS);
  // A worker (a thread started now, like the access-log writer) keeps the default.
  const worker = new Worker(
    `data:text/javascript,${
      encodeURIComponent(
        `const s = Deno.readTextFileSync("/proc/thread-self/sched");
         postMessage(Number(/se\\.slice\\s+:\\s+(\\d+)/.exec(s)[1]));`,
      )
    }`,
    { type: "module" },
  );
  try {
    const slice = await new Promise<number>((resolve) => worker.onmessage = (e) => resolve(e.data));
    assertEquals(slice, before);
  } finally {
    worker.terminate();
  }
});
