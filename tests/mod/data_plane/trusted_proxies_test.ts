import { assertEquals, ok } from "../../_helpers/assert.ts";
import { compileTrustedProxies, isCidr } from "../../../mod/data_plane/trusted_proxies.ts";
import { siteInputSchema } from "../../../mod/data_plane/site_schema.ts";
import { ipEntrySchema } from "../../../mod/protection/protection_schema.ts";

Deno.test("compileTrustedProxies() matches addresses inside the ranges only", () => {
  const set = compileTrustedProxies(["10.0.0.0/8", "192.168.1.7", "2001:db8::/32"]);
  ok(set.has("10.200.3.4"));
  ok(set.has("::ffff:10.1.1.1"));
  ok(set.has("192.168.1.7"));
  ok(!set.has("192.168.1.8"));
  ok(set.has("2001:db8:1::5"));
  ok(!set.has("2001:db9::5"));
  ok(!set.has("not an ip"));
  ok(!compileTrustedProxies([]).has("10.0.0.1"));
  ok(compileTrustedProxies(["0.0.0.0/0"]).has("8.8.8.8"));
});

Deno.test("isCidr() refuses a prefix longer than the address and malformed addresses", () => {
  ok(isCidr("10.0.0.0/8"));
  ok(isCidr("2001:db8::/32"));
  ok(isCidr("[::1]"));
  for (const bad of ["10.0.0.0/33", "::/129", "10.0.0.0/x", "", "1.2.3", "256.0.0.1", "1::2::3"]) {
    assertEquals(isCidr(bad), false, bad);
  }
});

Deno.test("trusted proxies and protection IP lists accept the same spellings: 010.0.0.1 is refused by both", () => {
  const site = (trusted: string) =>
    siteInputSchema.safeParse({
      name: "s",
      hosts: ["s.test"],
      upstreams: ["http://127.0.0.1:8080"],
      trusted_proxies: [trusted],
    }).success;
  const listEntry = (cidr: string) =>
    ipEntrySchema.safeParse({
      action: "block",
      cidr,
      site_id: null,
      path_prefix: null,
      expires_at: null,
    }).success;
  for (const text of ["010.0.0.1", "10.0.0.01", "10.0.0.0/8", "2001:db8::/32", "1.2.3.4/33"]) {
    assertEquals(site(text), listEntry(text), text);
  }
  assertEquals(site("010.0.0.1"), false);
  assertEquals(site("10.0.0.0/8"), true);
});
