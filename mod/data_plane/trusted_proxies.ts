/**
 * A site's trusted proxies, compiled once per policy: the addresses whose forwarding headers
 * (`X-Forwarded-For`, `Forwarded`) the data plane believes. Addresses and ranges are parsed by
 * the engine's one IP/CIDR parser (`engine/ip_address.ts`), so a trusted-proxy entry and an IP
 * list entry accept exactly the same spellings (`010.0.0.1` is refused by both).
 */
import { parseCidr } from "../../engine/ip_address.ts";
import { buildIpSet, type IpSet } from "../../engine/ip_set.ts";

/** A compiled set of ranges answering "is this address inside any of them". */
export interface TrustedProxies {
  has(ip: string): boolean;
  readonly size: number;
}

/** True when `text` is an address or range the data plane can compile. */
export function isCidr(text: string): boolean {
  return parseCidr(text) !== undefined;
}

const NO_PROXIES: TrustedProxies = { size: 0, has: () => false };

/** Compiles ranges once; lookups cache their answers per address text (bounded). */
export function compileTrustedProxies(ranges: readonly string[]): TrustedProxies {
  if (ranges.length === 0) return NO_PROXIES;
  const set: IpSet<true> = buildIpSet(ranges.map((r) => {
    const cidr = parseCidr(r);
    if (!cidr) throw new Error(`Invalid CIDR range: "${r}"`);
    return [cidr, true] as const;
  }));
  // Peers repeat (a proxy in front keeps calling from the same few addresses), so the answer
  // per address text is cached; the cache is cleared when it grows past a bound.
  const cache = new Map<string, boolean>();
  return {
    size: set.size,
    has(ip: string): boolean {
      const known = cache.get(ip);
      if (known !== undefined) return known;
      const inside = set.lookupText(ip).length > 0;
      if (cache.size >= 4096) cache.clear();
      cache.set(ip, inside);
      return inside;
    },
  };
}
