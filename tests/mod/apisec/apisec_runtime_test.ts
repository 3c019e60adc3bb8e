import { assertEquals } from "../../_helpers/assert.ts";
import type { CompiledDiscovery } from "../../../mod/apisec/apisec_compile.ts";
import { createApiSecRuntime } from "../../../mod/apisec/apisec_runtime.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";

const DISCOVERY: CompiledDiscovery = {
  enabled: true,
  sampleLimit: 5,
  ignorePrefixes: ["/static/"],
  ignoreSuffixes: [".css"],
};

function runtime(sampleShares?: number) {
  return createApiSecRuntime({
    clock: new FakeClock(),
    logger: createMemoryLogger(),
    openSecret: () => Promise.resolve(new Uint8Array(32)),
    inventory: { sample: () => {} },
    sampleShares,
  });
}

function taken(rt: ReturnType<typeof runtime>, now: number, n: number): number {
  let count = 0;
  for (let i = 0; i < n; i++) if (rt.shouldSample(DISCOVERY, `/api/${i}`, now)) count++;
  return count;
}

Deno.test("discovery takes sample_limit requests per minute, skipping ignored paths, and starts again the next minute", () => {
  const rt = runtime();
  const t0 = Date.UTC(2026, 0, 1);
  assertEquals(rt.shouldSample(DISCOVERY, "/static/app.js", t0), false);
  assertEquals(rt.shouldSample(DISCOVERY, "/theme.css", t0), false);
  assertEquals(taken(rt, t0, 20), 5);
  assertEquals(taken(rt, t0 + 59_000, 20), 0);
  assertEquals(taken(rt, t0 + 60_000, 20), 5);
});

Deno.test("with data-plane workers each takes its share of sample_limit (rounded up)", () => {
  const t0 = Date.UTC(2026, 0, 1);
  const workers = [runtime(2), runtime(2)];
  assertEquals(workers.map((rt) => taken(rt, t0, 20)), [3, 3]);
  assertEquals(taken(runtime(10), t0, 20), 1);
});
