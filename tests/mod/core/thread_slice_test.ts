import { assertEquals, ok as assert } from "../../_helpers/assert.ts";
import { EVENT_LOOP_SLICE_NS } from "../../../mod/core/thread_slice.ts";
import { runUnderTerminal } from "../../_helpers/terminal.ts";

const MODULE = new URL("../../../mod/core/thread_slice.ts", import.meta.url).href;
const OWN_SLICE = `Number(/se\\.slice\\s+:\\s+(\\d+)/.exec(
  Deno.readTextFileSync("/proc/thread-self/sched"))[1])`;

/** Runs `code` (a module's text) on a new thread and resolves with what it posts. */
function onNewThread<T>(code: string): Promise<T> {
  const worker = new Worker(`data:text/javascript,${encodeURIComponent(code)}`, {
    type: "module",
  });
  return new Promise<T>((resolve, reject) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.onerror = (e) => reject(new Error(e.message));
  }).finally(() => worker.terminate());
}

Deno.test("the event loop's thread gets a short slice, threads started after it do not", async () => {
  // On a fresh thread: the test runner's own thread may have run a server before (its slice is
  // short then), and a new thread starts with the default either way.
  const got = await onNewThread<{ before: number; set: boolean; after: number; child: number }>(`
    import { shortenThreadSlice } from "${MODULE}";
    const before = ${OWN_SLICE};
    const set = shortenThreadSlice();
    const after = ${OWN_SLICE};
    // A thread started now (like the access-log writer) keeps the default.
    const child = new Worker("data:text/javascript," + encodeURIComponent(
      "postMessage(" + ${JSON.stringify(OWN_SLICE)} + ")"), { type: "module" });
    child.onmessage = (e) => { child.terminate(); postMessage({ before, set, after, child: e.data }); };
  `);
  assert(got.before > EVENT_LOOP_SLICE_NS, `the default slice (${got.before} ns) is longer`);
  assertEquals(got.set, true);
  assertEquals(got.after, EVENT_LOOP_SLICE_NS);
  assertEquals(got.child, got.before);
});

Deno.test("without --allow-ffi on a terminal the slice is left alone instead of prompting (which blocks the event loop)", async () => {
  const text = await runUnderTerminal(
    `import { shortenThreadSlice } from "${MODULE}";
console.log("set=" + shortenThreadSlice());
`,
    ["--allow-read"],
  );
  assert(!text.includes("Allow?"), `it prompted for FFI:\n${text}`);
  assert(text.includes("set=false"), text);
});
