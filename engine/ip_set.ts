/**
 * An immutable set of IPv4/IPv6 networks with a payload per entry, built once per policy.
 *
 * Entries are grouped by prefix length into hash maps keyed by the masked network, so a lookup
 * costs one mask and one map probe per distinct prefix length present (at most 33 for IPv4,
 * 129 for IPv6, typically a handful) whatever the number of entries: 100,000 single addresses
 * are one probe. This is the routing-table "hash per prefix length" layout; it beats a binary
 * trie here because JavaScript map probes are cheaper than 32 pointer hops.
 */
import { type Cidr, type IpAddress, parseCidr, parseIp } from "./ip_address.ts";

interface Level<T> {
  readonly prefix: number;
  readonly byNetwork: ReadonlyMap<number | string, readonly T[]>;
}

const V4_MASKS: readonly number[] = Array.from(
  { length: 33 },
  (_, p) => p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0,
);

function v6Key(words: readonly number[], prefix: number): string {
  let key = "";
  for (let i = 0; i < 4; i++) {
    const keep = prefix - i * 32;
    const w = keep >= 32 ? words[i]! : keep <= 0 ? 0 : (words[i]! & V4_MASKS[keep]!) >>> 0;
    key += i === 0 ? String(w) : `:${w}`;
  }
  return key;
}

function networkKey(version: 4 | 6, words: readonly number[], prefix: number): number | string {
  return version === 4 ? (words[0]! & V4_MASKS[prefix]!) >>> 0 : v6Key(words, prefix);
}

/** A read-only IP set; build it with {@link buildIpSet}. */
export interface IpSet<T> {
  /** Number of entries. */
  readonly size: number;
  /** Payloads of every network containing `ip`, most specific first. */
  lookup(ip: IpAddress): readonly T[];
  /** Same as {@link lookup} for an address in text; an unparsable address matches nothing. */
  lookupText(ip: string): readonly T[];
}

const NONE: readonly never[] = Object.freeze([]);

function buildLevels<T>(entries: ReadonlyArray<readonly [Cidr, T]>, version: 4 | 6): Level<T>[] {
  const byPrefix = new Map<number, Map<number | string, T[]>>();
  for (const [cidr, payload] of entries) {
    if (cidr.version !== version) continue;
    let level = byPrefix.get(cidr.prefix);
    if (!level) byPrefix.set(cidr.prefix, level = new Map());
    const key = networkKey(version, cidr.words, cidr.prefix);
    const list = level.get(key);
    if (list) list.push(payload);
    else level.set(key, [payload]);
  }
  return [...byPrefix.entries()]
    .sort((a, b) => b[0] - a[0])
    .map(([prefix, byNetwork]) => ({ prefix, byNetwork }));
}

function lookupIn<T>(levels: readonly Level<T>[], ip: IpAddress): readonly T[] {
  let found: T[] | undefined;
  let single: readonly T[] | undefined;
  for (const level of levels) {
    const hit = level.byNetwork.get(networkKey(ip.version, ip.words, level.prefix));
    if (!hit) continue;
    if (single === undefined && found === undefined) single = hit;
    else {
      found ??= [...single!];
      found.push(...hit);
    }
  }
  return found ?? single ?? NONE;
}

/** Builds an immutable set from `[network, payload]` pairs; duplicates keep every payload. */
export function buildIpSet<T>(entries: ReadonlyArray<readonly [Cidr, T]>): IpSet<T> {
  const v4 = buildLevels(entries, 4);
  const v6 = buildLevels(entries, 6);
  const lookup = (ip: IpAddress): readonly T[] => lookupIn(ip.version === 4 ? v4 : v6, ip);
  return {
    size: entries.length,
    lookup,
    lookupText(text: string): readonly T[] {
      const ip = parseIp(text);
      return ip ? lookup(ip) : NONE;
    },
  };
}

/** Convenience for tests and small lists: parses each network text, throwing on a bad one. */
export function ipSetFrom<T>(entries: ReadonlyArray<readonly [string, T]>): IpSet<T> {
  return buildIpSet(entries.map(([text, payload]) => {
    const cidr = parseCidr(text);
    if (!cidr) throw new Error(`Invalid address or network: "${text}"`);
    return [cidr, payload] as const;
  }));
}

/** An entry of an IP allow or block list, as the data plane evaluates it. */
export interface IpListEntry {
  readonly id: string;
  readonly action: "allow" | "block";
  /** The network as written by the operator. */
  readonly cidr: string;
  /** `null` for a global entry. */
  readonly siteId: string | null;
  /** Applies only under this path prefix when set. */
  readonly pathPrefix: string | null;
  /** Epoch milliseconds after which the entry no longer applies; `null` for never. */
  readonly expiresAt: number | null;
}

/**
 * The deciding IP-list entry for a request: entries must match the site (or be global), the path
 * prefix and not be expired. An allow entry wins over a block entry, so an operator who allows
 * their own addresses is never locked out by a broader block range.
 */
export function matchIpList(
  set: IpSet<IpListEntry>,
  ip: IpAddress,
  siteId: string,
  path: string,
  now: number,
): IpListEntry | undefined {
  let block: IpListEntry | undefined;
  for (const e of set.lookup(ip)) {
    if (e.siteId !== null && e.siteId !== siteId) continue;
    if (e.expiresAt !== null && e.expiresAt <= now) continue;
    if (e.pathPrefix !== null && !path.startsWith(e.pathPrefix)) continue;
    if (e.action === "allow") return e;
    block ??= e;
  }
  return block;
}
