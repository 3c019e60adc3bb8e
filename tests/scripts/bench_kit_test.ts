import { assertEquals, ok } from "../_helpers/assert.ts";
import { eventLoopSched } from "../../scripts/bench_kit.ts";

Deno.test("eventLoopSched counts a process's event loop time on a core", async () => {
  // A Deno process whose event loop spends 300 ms of CPU (not wall time: the machine may be
  // loaded), then idles.
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "import process from 'node:process'; const start = process.cpuUsage().user; " +
      "while (process.cpuUsage().user - start < 300_000) {} " +
      "await new Promise((r) => setTimeout(r, 30_000));",
    ],
  }).spawn();
  try {
    const until = Date.now() + 20_000;
    let seen = eventLoopSched(child.pid);
    while (seen.runNs < 250_000_000 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      seen = eventLoopSched(child.pid);
    }
    ok(seen.runNs >= 250_000_000, `${seen.runNs} ns on a core`);
    ok(seen.waitNs >= 0);
  } finally {
    child.kill();
    await child.status;
  }
});

Deno.test("eventLoopSched of a process that is gone is zeros", async () => {
  const child = new Deno.Command("true").spawn();
  await child.status;
  assertEquals(eventLoopSched(child.pid), { runNs: 0, waitNs: 0 });
});
