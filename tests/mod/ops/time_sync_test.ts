/**
 * Time synchronisation against SNTP servers on loopback UDP: two that answer with known offsets
 * and delays, one that never answers; the offset is reported (never applied to the host clock),
 * applied to the offset clock only with `apply_offset`, and a large one warns.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { FakeClock, OffsetClock, systemClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import type { NewNotification } from "../../../mod/core/notifications.ts";
import { readTimestamp, writeTimestamp } from "../../../mod/ops/sntp.ts";
import { startSntpServer } from "../../_helpers/sntp_server.ts";
import { createTimeSync } from "../../../mod/ops/time_sync.ts";

Deno.test("writeTimestamp() and readTimestamp() round-trip Unix milliseconds", () => {
  const view = new DataView(new ArrayBuffer(8));
  writeTimestamp(view, 0, 1_767_225_600_123);
  ok(Math.abs(readTimestamp(view, 0) - 1_767_225_600_123) < 0.001);
});

Deno.test("reselect() picks the reachable server with the lowest delay; sync() reports its offset", async () => {
  await using near = await startSntpServer(5_000, 0);
  await using far = await startSntpServer(-3_000, 150);
  await using silent = await startSntpServer(0, 0, false);
  const notes: NewNotification[] = [];
  const adjusted = new OffsetClock(systemClock);
  const sync = createTimeSync({
    servers: [silent.address, far.address, near.address],
    applyOffset: false,
    maxOffsetMs: 1_000,
    intervalMs: 0,
    // What the silent server costs; the far one answers after 150 ms, plus what load adds.
    timeoutMs: 2_000,
  }, {
    clock: systemClock,
    adjusted,
    logger: createMemoryLogger(),
    notify: (n) => {
      notes.push(n);
      return "id";
    },
  });
  const view = await sync.reselect();
  assertEquals(view.active, near.address);
  ok(view.chosen_at !== null);
  ok(Math.abs(view.offset_ms! - 5_000) < 100, `offset ${view.offset_ms}`);
  const byServer = Object.fromEntries(view.servers.map((s) => [s.server, s]));
  assertEquals(byServer[silent.address]!.reachable, false);
  ok(byServer[silent.address]!.error!.includes("no answer"));
  ok(
    Math.abs(byServer[far.address]!.offset_ms! + 3_000) < 200,
    `${byServer[far.address]!.offset_ms}`,
  );
  ok(byServer[far.address]!.delay_ms! >= 100);
  assertEquals(byServer[near.address]!.stratum, 2);
  // The offset warns but is not applied: the host clock is never set.
  assertEquals(view.offset_exceeded, true);
  assertEquals(view.sets_host_clock, false);
  assertEquals(adjusted.offsetMs, 0);
  assertEquals(notes.map((n) => n.kind), ["time.offset"]);
  // A second measurement of the same state does not notify again.
  await sync.sync();
  assertEquals(notes.length, 1);
});

Deno.test("apply_offset makes the offset clock add the measured offset", async () => {
  // One clock, standing still, for both sides: the measured offset is exactly the server's (a
  // real clock adds half of any difference between the two legs' delays, which load makes).
  const clock = new FakeClock();
  await using server = await startSntpServer(-2_500, 0, true, () => clock.now());
  const adjusted = new OffsetClock(clock);
  const sync = createTimeSync({
    servers: [server.address],
    applyOffset: true,
    maxOffsetMs: 10_000,
    intervalMs: 0,
    timeoutMs: 10_000,
  }, { clock, adjusted, logger: createMemoryLogger() });
  const view = await sync.sync();
  assertEquals(adjusted.offsetMs, -2_500);
  assertEquals(view.offset_exceeded, false);
  assertEquals(adjusted.now(), clock.now() - 2_500);
  clock.advance(60_000);
  assertEquals(adjusted.now(), clock.now() - 2_500);
});
