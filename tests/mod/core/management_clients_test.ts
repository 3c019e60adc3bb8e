/** The management listener's own addresses and signed-in clients, which ALAP never blocks. */
import { assertEquals } from "../../_helpers/assert.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import {
  KNOWN_FOR_MS,
  ManagementClients,
  MAX_KNOWN,
} from "../../../mod/core/management_clients.ts";

Deno.test("ManagementClients knows its own addresses for good and clients for a day, in any spelling", () => {
  const clock = new FakeClock();
  const known = new ManagementClients(clock, ["10.0.0.2", "localhost"]);
  known.remember("2001:db8::7");
  assertEquals(
    [known.has("10.0.0.2"), known.has("::ffff:10.0.0.2"), known.has("2001:0db8:0::7")],
    [true, true, true],
  );
  assertEquals([known.has("10.0.0.3"), known.has("not an address")], [false, false]);
  clock.advance(KNOWN_FOR_MS + 1);
  assertEquals([known.has("2001:db8::7"), known.has("10.0.0.2")], [false, true]);
});

Deno.test("ManagementClients stays bounded, the longest unseen client leaving first", () => {
  const known = new ManagementClients(new FakeClock());
  known.remember("192.0.2.1");
  for (let i = 0; i < MAX_KNOWN; i++) known.remember(`198.51.${i >> 8}.${i & 255}`);
  assertEquals([known.has("192.0.2.1"), known.has("198.51.0.0")], [false, true]);
});
