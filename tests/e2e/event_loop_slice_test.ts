import { assertEquals, ok } from "../_helpers/assert.ts";
import { spawnWaf } from "../_helpers/process.ts";
import { tempDir } from "../_helpers/temp.ts";
import { EVENT_LOOP_SLICE_NS } from "../../mod/core/thread_slice.ts";

const CONFIG =
  'server:\n  data:\n    listen: "127.0.0.1:0"\n    workers: 1\n  management:\n    listen: "127.0.0.1:0"\n';

/** Each thread of `pid` by name (the first thread as `main`), with its slice in ns. */
function slices(pid: number): { name: string; slice: number }[] {
  return [...Deno.readDirSync(`/proc/${pid}/task`)].map((t) => {
    const dir = `/proc/${pid}/task/${t.name}`;
    const sched = Deno.readTextFileSync(`${dir}/sched`);
    return {
      name: t.name === String(pid) ? "main" : Deno.readTextFileSync(`${dir}/comm`).trim(),
      slice: Number(/se\.slice\s+:\s+(\d+)/.exec(sched)![1]),
    };
  });
}

Deno.test("waf serve runs its event loop with a short slice and its other threads without", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, CONFIG);
  await using waf = spawnWaf(["serve", "--data-dir", dir]);
  await waf.waitFor(/data_plane=127\.0\.0\.1:\d+/);
  const threads = slices(waf.child.pid);
  assertEquals(threads.find((t) => t.name === "main")?.slice, EVENT_LOOP_SLICE_NS);
  // The access-log writer, V8's helpers and tokio's threads keep the default.
  const others = threads.filter((t) => t.name !== "main");
  ok(others.length > 0);
  for (const t of others) ok(t.slice > EVENT_LOOP_SLICE_NS, `${t.name}: ${t.slice} ns`);
  assertEquals(await waf.stop("SIGTERM"), 0);
});

Deno.test("with data workers each one's event loop has the short slice too", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, CONFIG.replace("workers: 1", "workers: 2"));
  await using waf = spawnWaf(["serve", "--data-dir", dir]);
  await waf.waitFor(/data_plane=127\.0\.0\.1:\d+/);
  const threads = slices(waf.child.pid);
  assertEquals(threads.find((t) => t.name === "main")?.slice, EVENT_LOOP_SLICE_NS);
  // Two data workers; the access-log writer, also a worker thread, keeps the default.
  const short = threads.filter((t) => t.name !== "main" && t.slice === EVENT_LOOP_SLICE_NS);
  assertEquals(short.length, 2, JSON.stringify(threads));
  ok(threads.length - short.length > 2);
  assertEquals(await waf.stop("SIGTERM"), 0);
});
