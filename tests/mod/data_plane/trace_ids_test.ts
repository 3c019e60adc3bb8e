import { assertEquals, ok } from "../../_helpers/assert.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createTraceIds } from "../../../mod/data_plane/trace_ids.ts";

Deno.test("createTraceIds() makes 32 hex characters, unique within one millisecond", () => {
  const next = createTraceIds(systemRandom, new FakeClock());
  const ids = Array.from({ length: 1000 }, next);
  for (const id of ids) assertEquals(/^[0-9a-f]{32}$/.test(id), true, id);
  assertEquals(new Set(ids).size, ids.length);
});

Deno.test("createTraceIds() puts the time first, so a later id sorts after an earlier one", () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const next = createTraceIds(systemRandom, clock);
  const first = next();
  clock.advance(1);
  const second = next();
  ok(second > first);
  assertEquals(first.slice(0, 12), Date.UTC(2026, 0, 1).toString(16).padStart(12, "0"));
});

Deno.test("createTraceIds() takes the other 80 bits from the injected random source", () => {
  const next = createTraceIds({ bytes: (n) => new Uint8Array(n).fill(0xab) }, new FakeClock());
  assertEquals(next().slice(12), "ab".repeat(10));
});
