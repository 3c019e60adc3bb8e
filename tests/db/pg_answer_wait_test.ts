/**
 * The PostgreSQL store's facade waits on a shared buffer for its connection thread's answer
 * (db/pg/pg_worker_layout.ts). A notify that arrives without the answer, or with another
 * request's answer, must not end the wait: the thread stores its answer before it notifies, so
 * a late notify of the previous answer can wake the wait for the next request.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { HEADER_BYTES, waitForAnswer } from "../../db/pg/pg_worker_layout.ts";

/** A thread that runs `steps` on the header: `notify` wakes without answering, a number answers. */
function thread(buffer: SharedArrayBuffer, steps: ReadonlyArray<number | "notify">): Worker {
  const code = `self.onmessage = async (e) => {
    const header = new Int32Array(e.data.buffer, 0, 4);
    for (const step of e.data.steps) {
      await new Promise((r) => setTimeout(r, 40));
      if (step !== "notify") {
        Atomics.store(header, 3, step);
        Atomics.store(header, 0, 1);
      }
      Atomics.notify(header, 0);
    }
  };`;
  const url = URL.createObjectURL(new Blob([code], { type: "application/javascript" }));
  const worker = new Worker(url, { type: "module" });
  worker.postMessage({ buffer, steps });
  return worker;
}

Deno.test("waitForAnswer() waits on through a wake-up that brought no answer", () => {
  const buffer = new SharedArrayBuffer(HEADER_BYTES);
  const header = new Int32Array(buffer, 0, 4);
  const worker = thread(buffer, ["notify", "notify", 7]);
  try {
    assertEquals(waitForAnswer(header, 7, 10_000), true);
    assertEquals(Atomics.load(header, 3), 7);
  } finally {
    worker.terminate();
  }
});

Deno.test("waitForAnswer() does not take another request's answer for its own", () => {
  const buffer = new SharedArrayBuffer(HEADER_BYTES);
  const header = new Int32Array(buffer, 0, 4);
  const worker = thread(buffer, ["notify", 6]);
  try {
    assertEquals(waitForAnswer(header, 8, 10_000), false);
    assertEquals(Atomics.load(header, 3), 6);
  } finally {
    worker.terminate();
  }
});

Deno.test("waitForAnswer() gives up when no answer comes in time", () => {
  const buffer = new SharedArrayBuffer(HEADER_BYTES);
  const header = new Int32Array(buffer, 0, 4);
  const worker = thread(buffer, ["notify"]);
  try {
    assertEquals(waitForAnswer(header, 3, 300), false);
  } finally {
    worker.terminate();
  }
});
