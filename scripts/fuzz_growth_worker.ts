/**
 * The worker of `fuzz_growth.ts`: inspects the bodies it is sent and answers with the least CPU
 * milliseconds of two inspections, so the main thread can give up on one that never ends
 * (a backtracking pattern cannot be interrupted from inside) by terminating the worker.
 */

/// <reference lib="deno.worker" />

import { inspect } from "../engine/inspect.ts";
import { cpuMs } from "./bench_kit.ts";

self.onmessage = (e: MessageEvent<{ type: string; body: Uint8Array }>) => {
  const req = {
    method: "POST",
    path: "/",
    query: "",
    headers: [["content-type", e.data.type]] as [string, string][],
    body: e.data.body,
  };
  let best = Infinity;
  for (let k = 0; k < 2; k++) {
    const t0 = cpuMs();
    inspect(req, { level: "balanced" });
    best = Math.min(best, cpuMs() - t0);
  }
  self.postMessage(best);
};
