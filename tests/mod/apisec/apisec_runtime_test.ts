import { normalizePath } from "../../../engine/path_normalize.ts";
import { assertEquals } from "../../_helpers/assert.ts";
import type { CompiledDiscovery } from "../../../mod/apisec/apisec_compile.ts";
import { createApiSecRuntime } from "../../../mod/apisec/apisec_runtime.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { compileApiSec } from "../../../mod/apisec/apisec_compile.ts";
import { apisecStoredSchema } from "../../../mod/apisec/apisec_schema.ts";
import { allocateSharedState, openSharedState } from "../../../mod/data_plane/shared_state.ts";

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

Deno.test("a route limit of N per window is N across workers sharing one state", () => {
  const buffers = allocateSharedState({ limitBuckets: 64, nonceBuckets: 64 });
  const c = compileApiSec(apisecStoredSchema.parse({
    rate_limits: [{
      id: "login",
      method: "POST",
      path_pattern: "^/login$",
      requests: 5,
      window: "1m",
    }],
  }));
  const workers = [1, 2].map((owner) =>
    createApiSecRuntime({
      clock: new FakeClock(),
      logger: createMemoryLogger(),
      openSecret: () => Promise.resolve(new Uint8Array(32)),
      inventory: { sample: () => {} },
      limiter: openSharedState(buffers, owner).limiter,
    })
  );
  const now = Date.UTC(2026, 0, 1);
  const req = {
    siteId: "s",
    methods: ["POST"],
    path: normalizePath("/login", "generic"),
    clientIp: "192.0.2.9",
    now,
  };
  const kinds = Array.from({ length: 12 }, (_, i) => workers[i % 2]!.routeLimits(c, req).kind);
  assertEquals(kinds.filter((k) => k === "pass").length, 5, kinds.join(" "));
  c.holder.release();
});
