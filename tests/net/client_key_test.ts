/**
 * The per-client cap's key (issue #37, item 3): an IPv4 address as it is, an IPv6 address by
 * its /64, so one host cannot open unlimited connections by taking a new address of its /64
 * for each.
 */
import { assertEquals, notEqual } from "../_helpers/assert.ts";
import { clientKey } from "../../net/client_key.ts";

Deno.test("clientKey() keys an IPv4 address, mapped or not, as the address", () => {
  assertEquals(clientKey("192.0.2.7"), "192.0.2.7");
  assertEquals(clientKey("::ffff:192.0.2.7"), "192.0.2.7");
  assertEquals(clientKey("::ffff:c000:207"), "192.0.2.7");
  notEqual(clientKey("192.0.2.7"), clientKey("192.0.2.8"));
});

Deno.test("clientKey() keys every address of one IPv6 /64 alike, however it is written", () => {
  const key = "2001:db8:1:2:0:0:0:0/64";
  for (
    const address of [
      "2001:db8:1:2::1",
      "2001:db8:1:2:ffff:ffff:ffff:ffff",
      "2001:0DB8:0001:0002:a:b:c:d",
      "[2001:db8:1:2::9]",
      "2001:db8:1:2::1%eth0",
    ]
  ) assertEquals(clientKey(address), key, address);
  assertEquals(clientKey("2001:db8:1:3::1"), "2001:db8:1:3:0:0:0:0/64");
  assertEquals(clientKey("::1"), "0:0:0:0:0:0:0:0/64");
});

Deno.test("clientKey() leaves what is no address as it is", () => {
  assertEquals(clientKey("unknown"), "unknown");
  assertEquals(clientKey("2001:db8::1::2"), "2001:db8::1::2");
});
