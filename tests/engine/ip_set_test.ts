import { assertEquals, ok } from "../_helpers/assert.ts";
import { formatCidr, parseCidr, parseIp } from "../../engine/ip_address.ts";
import { buildIpSet, ipSetFrom } from "../../engine/ip_set.ts";
import { buildIpList, type IpListEntry, ipListOf } from "../../engine/ip_list.ts";

Deno.test("parseIp() reads IPv4, IPv6 with ::, embedded IPv4 and zone ids", () => {
  assertEquals(parseIp("10.0.0.1"), { version: 4, words: [0x0a000001] });
  assertEquals(parseIp("::1"), { version: 6, words: [0, 0, 0, 1] });
  assertEquals(parseIp("2001:db8::1"), { version: 6, words: [0x20010db8, 0, 0, 1] });
  assertEquals(parseIp("[fe80::1%eth0]"), { version: 6, words: [0xfe800000, 0, 0, 1] });
  assertEquals(parseIp("64:ff9b::192.0.2.1"), {
    version: 6,
    words: [0x0064ff9b, 0, 0, 0xc0000201],
  });
});

Deno.test("parseIp() folds an IPv4-mapped IPv6 address to IPv4", () => {
  assertEquals(parseIp("::ffff:192.0.2.7"), parseIp("192.0.2.7"));
});

Deno.test("parseIp() refuses malformed addresses", () => {
  for (
    const bad of [
      "",
      "1.2.3",
      "1.2.3.256",
      "01.2.3.4",
      "1.2.3.00",
      "1.2.3.0400",
      "1..2.3",
      "1.2.3.4.5",
      "1.2.3.",
      ".1.2.3",
      "1.2.3.-4",
      "1.2.3.4x",
      "::ffff:01.2.3.4",
      "1:2:3:4:5:6:7:8:9",
      "1::2::3",
      "g::1",
    ]
  ) {
    assertEquals(parseIp(bad), undefined, bad);
  }
});

Deno.test("parseIp() reads every dotted-quad edge value and surrounding spaces", () => {
  assertEquals(parseIp("0.0.0.0"), { version: 4, words: [0] });
  assertEquals(parseIp("255.255.255.255"), { version: 4, words: [0xffffffff] });
  assertEquals(parseIp(" 100.200.250.9 "), { version: 4, words: [0x64c8fa09] });
  assertEquals(parseIp("10.0.0.10"), { version: 4, words: [0x0a00000a] });
});

Deno.test("parseCidr() clears host bits and checks the prefix range", () => {
  assertEquals(formatCidr(parseCidr("10.1.2.3/8")!), "10.0.0.0/8");
  assertEquals(formatCidr(parseCidr("2001:db8:ffff::/32")!), "2001:db8:0:0:0:0:0:0/32");
  assertEquals(parseCidr("10.0.0.0/33"), undefined);
  assertEquals(parseCidr("::/129"), undefined);
  assertEquals(parseCidr("10.0.0.0/x"), undefined);
  assertEquals(parseCidr("1.2.3.4")!.prefix, 32);
});

Deno.test("IpSet lookup returns every containing network, most specific first", () => {
  const set = ipSetFrom([["10.0.0.0/8", "wide"], ["10.1.0.0/16", "mid"], ["10.1.2.3", "host"]]);
  assertEquals(set.lookupText("10.1.2.3"), ["host", "mid", "wide"]);
  assertEquals(set.lookupText("10.1.9.9"), ["mid", "wide"]);
  assertEquals(set.lookupText("11.0.0.1"), []);
  assertEquals(set.lookupText("not an ip"), []);
});

Deno.test("IpSet keeps IPv4 and IPv6 apart and matches IPv6 ranges", () => {
  const set = ipSetFrom([["2001:db8::/32", "v6"], ["0.0.0.0/0", "all-v4"]]);
  assertEquals(set.lookupText("2001:db8:1::5"), ["v6"]);
  assertEquals(set.lookupText("2001:db9::5"), []);
  assertEquals(set.lookupText("::ffff:8.8.8.8"), ["all-v4"]);
  assertEquals(set.lookupText("::1"), []);
});

Deno.test("IpSet answers correctly with 100,000 entries", () => {
  const entries = [];
  for (let i = 0; i < 100_000; i++) {
    entries.push(
      [{ version: 4 as const, words: [(0x0b000000 + i * 7) >>> 0], prefix: 32 }, i] as const,
    );
  }
  const set = buildIpSet(entries);
  assertEquals(set.size, 100_000);
  assertEquals(set.lookup({ version: 4, words: [0x0b000000 + 7 * 4242] }), [4242]);
  assertEquals(set.lookup({ version: 4, words: [0x0b000000 + 7 * 4242 + 1] }), []);
});

const entry = (over: Partial<IpListEntry>): IpListEntry => ({
  id: "e",
  action: "block",
  cidr: "10.0.0.0/8",
  siteId: null,
  pathPrefix: null,
  expiresAt: null,
  ...over,
});

const list = (entries: ReadonlyArray<readonly [string, IpListEntry]>) =>
  buildIpList(entries.map(([text, e]) => [parseCidr(text)!, e] as const));

Deno.test("IpList.match() honours site scope, path prefix and expiry", () => {
  const set = list([
    ["10.0.0.0/8", entry({ id: "site-b", siteId: "b" })],
    ["10.0.0.0/8", entry({ id: "admin-only", pathPrefix: "/admin" })],
    ["10.0.0.0/8", entry({ id: "expired", expiresAt: 1000 })],
  ]);
  const ip = parseIp("10.9.9.9")!;
  assertEquals(set.match(ip, "a", "/", 2000), undefined);
  assertEquals(set.match(ip, "b", "/", 2000)?.id, "site-b");
  assertEquals(set.match(ip, "a", "/admin/x", 2000)?.id, "admin-only");
  assertEquals(set.match(ip, "a", "/", 999)?.id, "expired");
});

Deno.test("IpList.match() lets an allow entry win over a block entry", () => {
  const set = list([
    ["10.0.0.0/8", entry({ id: "blk" })],
    ["0.0.0.0/0", entry({ id: "alw", action: "allow" })],
  ]);
  const hit = set.match(parseIp("10.1.1.1")!, "a", "/", 0);
  ok(hit);
  assertEquals(hit.id, "alw");
});

Deno.test("IpList.match() rebuilds the deciding entry exactly as it was given", () => {
  const given = entry({
    id: "ipe_42",
    cidr: "2001:db8::/32",
    siteId: "shop",
    pathPrefix: "/api",
    expiresAt: 5000,
  });
  const set = list([["10.0.0.0/8", entry({ id: "other" })], ["2001:db8::/32", given]]);
  assertEquals(set.match(parseIp("2001:db8::7")!, "shop", "/api/x", 10), given);
  assertEquals(set.match(parseIp("2001:db8::7")!, "blog", "/api/x", 10), undefined);
  assertEquals(set.size, 2);
});

Deno.test("IPv6 networks of every prefix length are found, most specific first, duplicates kept", () => {
  const set = ipSetFrom([
    ["2001:db8::/32", "32"],
    ["2001:db8:0:1::/64", "64"],
    ["2001:db8:0:1::/64", "64b"],
    ["2001:db8:0:1:8000::/65", "65"],
    ["2001:db8:0:1:8000::1", "128"],
    ["::/0", "all"],
    ["2001:db8:ffff:ffff::/63", "63"],
  ]);
  assertEquals(set.lookupText("2001:db8:0:1:8000::1"), ["128", "65", "64", "64b", "32", "all"]);
  assertEquals(set.lookupText("2001:db8:0:1::1"), ["64", "64b", "32", "all"]);
  assertEquals(set.lookupText("2001:db8:ffff:fffe::9"), ["63", "32", "all"]);
  assertEquals(set.lookupText("2001:db9::1"), ["all"]);
  assertEquals(set.lookupText("10.0.0.1"), []);
});

Deno.test("an IP list's tables copied to another thread answer as the list does", () => {
  const given = [
    ["10.0.0.0/8", entry({ id: "wide" })],
    ["10.1.2.3", entry({ id: "host", action: "allow", cidr: "10.1.2.3" })],
    ["2001:db8::/48", entry({ id: "v6", siteId: "shop", cidr: "2001:db8::/48" })],
    ["2001:db8::/48", entry({ id: "v6-admin", pathPrefix: "/admin", expiresAt: 5000 })],
  ] as const;
  const original = list(given);
  const copied = ipListOf(structuredClone(original.state));
  const cases: Array<[string, string, string, number]> = [
    ["10.1.2.3", "a", "/", 0],
    ["10.9.9.9", "a", "/", 0],
    ["11.0.0.1", "a", "/", 0],
    ["2001:db8::5", "shop", "/", 0],
    ["2001:db8::5", "blog", "/admin/x", 10],
    ["2001:db8::5", "blog", "/admin/x", 6000],
    ["2001:db8:1::5", "shop", "/", 0],
  ];
  for (const [ip, site, path, now] of cases) {
    assertEquals(
      copied.match(parseIp(ip)!, site, path, now),
      original.match(parseIp(ip)!, site, path, now),
    );
  }
  assertEquals(copied.match(parseIp("2001:db8::5")!, "blog", "/admin/x", 10), given[3][1]);
  assertEquals(copied.size, 4);
});
