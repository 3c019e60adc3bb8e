import { assertEquals, ok } from "../../_helpers/assert.ts";
import { compileCidrs, parseCidr, parseIp } from "../../../mod/data_plane/cidr.ts";

Deno.test("parseIp() reads IPv4, IPv6, bracketed and IPv4-mapped addresses", () => {
  assertEquals(parseIp("10.0.0.1"), parseIp("::ffff:10.0.0.1"));
  assertEquals(parseIp("[::1]"), 1n);
  assertEquals(parseIp("2001:db8::1"), parseIp("2001:0db8:0:0:0:0:0:1"));
  for (const bad of ["", "1.2.3", "256.0.0.1", "1::2::3", "gggg::1", "example.com"]) {
    assertEquals(parseIp(bad), undefined, bad);
  }
});

Deno.test("parseCidr() refuses a prefix longer than the address", () => {
  ok(parseCidr("10.0.0.0/8"));
  ok(parseCidr("2001:db8::/32"));
  assertEquals(parseCidr("10.0.0.0/33"), undefined);
  assertEquals(parseCidr("::/129"), undefined);
  assertEquals(parseCidr("10.0.0.0/x"), undefined);
});

Deno.test("compileCidrs() matches addresses inside the ranges only", () => {
  const set = compileCidrs(["10.0.0.0/8", "192.168.1.7", "2001:db8::/32"]);
  ok(set.has("10.200.3.4"));
  ok(set.has("::ffff:10.1.1.1"));
  ok(set.has("192.168.1.7"));
  ok(!set.has("192.168.1.8"));
  ok(set.has("2001:db8:1::5"));
  ok(!set.has("2001:db9::5"));
  ok(!set.has("not an ip"));
  ok(!compileCidrs([]).has("10.0.0.1"));
  ok(compileCidrs(["0.0.0.0/0"]).has("8.8.8.8"));
});
