/**
 * IP set lookups with 100,000 entries (single addresses, /24s and IPv6 /64s mixed), against a
 * `Set<string>.has` of the address text as the baseline: results read as ratios.
 */
import { parseIp } from "../../engine/ip_address.ts";
import { buildIpSet, buildIpTables, ipSetOf } from "../../engine/ip_set.ts";
import type { Cidr } from "../../engine/ip_address.ts";

const entries: Array<readonly [Cidr, number]> = [];
const texts = new Set<string>();
for (let i = 0; i < 100_000; i++) {
  const n = (0x0b000000 + i * 97) >>> 0;
  if (i % 10 === 0) {
    entries.push([{ version: 6, words: [0x20010db8, i, 0, 0], prefix: 64 }, i]);
  } else if (i % 10 === 1) {
    entries.push([{ version: 4, words: [(n & 0xffffff00) >>> 0], prefix: 24 }, i]);
  } else {
    entries.push([{ version: 4, words: [n], prefix: 32 }, i]);
  }
  texts.add(`${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`);
}
const set = buildIpSet(entries);
/** The same set as a data-plane worker holds it: the tables copied (`postMessage`) and wrapped. */
const copied = ipSetOf(structuredClone(buildIpTables(entries)));
const linear = entries.slice();
const hitText = "11.0.97.194";
const hit = parseIp(hitText)!;
const missV6 = parseIp("2001:db9::1")!;
const hitV6 = parseIp("2001:db8:0:14::1")!;

Deno.bench("baseline: Set<string>.has (exact text only)", { group: "ip", baseline: true }, () => {
  texts.has(hitText);
});
Deno.bench("IpSet.lookup, 100k entries, IPv4 hit", { group: "ip" }, () => {
  set.lookup(hit);
});
Deno.bench("IpSet.lookup, 100k entries, IPv6 miss", { group: "ip" }, () => {
  set.lookup(missV6);
});
Deno.bench("IpSet.lookup, 100k entries, IPv6 hit", { group: "ip" }, () => {
  set.lookup(hitV6);
});
Deno.bench("IpSet.lookup on copied tables (a worker's), IPv4 hit", { group: "ip" }, () => {
  copied.lookup(hit);
});
Deno.bench("IpSet.lookupText (parse + lookup), 100k entries", { group: "ip" }, () => {
  set.lookupText(hitText);
});
Deno.bench("linear scan of 100k entries (what the set avoids)", { group: "ip" }, () => {
  const w = hit.words[0]!;
  for (const [c] of linear) {
    if (c.version === 4 && ((w >>> (32 - c.prefix)) === (c.words[0]! >>> (32 - c.prefix)))) break;
  }
});
Deno.bench("build an IpSet of 100k entries", { group: "build" }, () => {
  buildIpSet(entries);
});
