/**
 * An immutable set of IPv4/IPv6 networks with a payload per entry, built once per policy.
 *
 * Entries are grouped by prefix length ("one table per prefix length", as routing tables do), so
 * a lookup costs one mask and one search per distinct prefix length present (at most 33 for
 * IPv4, 129 for IPv6, typically a handful) whatever the number of entries. IPv4 tables are sorted
 * typed arrays searched in 17 steps for 100,000 networks; IPv6 tables are hash maps keyed by the
 * masked network.
 */
import { type Cidr, type IpAddress, parseCidr, parseIp } from "./ip_address.ts";

interface Level<T> {
  readonly prefix: number;
  readonly byNetwork: ReadonlyMap<number | string, readonly T[]>;
}

/**
 * An IPv4 prefix length laid out without per-network objects: sorted networks in a typed array,
 * found by binary search, with `starts[i]..starts[i+1]` indexing that network's payloads in the
 * set's flat payload list. 100,000 networks are three arrays instead of 100,000 map entries and
 * arrays, which the garbage collector would otherwise mark on every major collection while the
 * data plane waits.
 */
interface V4Level {
  readonly mask: number;
  readonly networks: Uint32Array;
  readonly starts: Uint32Array;
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

/** IPv4 levels, most specific first, and their payloads in one flat list. */
function buildV4<T>(
  entries: ReadonlyArray<readonly [Cidr, T]>,
): { levels: V4Level[]; payloads: T[] } {
  const byPrefix = new Map<number, Array<readonly [number, T]>>();
  for (const [cidr, payload] of entries) {
    if (cidr.version !== 4) continue;
    let list = byPrefix.get(cidr.prefix);
    if (!list) byPrefix.set(cidr.prefix, list = []);
    list.push([(cidr.words[0]! & V4_MASKS[cidr.prefix]!) >>> 0, payload]);
  }
  const payloads: T[] = [];
  const levels: V4Level[] = [];
  for (const prefix of [...byPrefix.keys()].sort((a, b) => b - a)) {
    // A stable sort keeps duplicates of one network in insertion order.
    const list = byPrefix.get(prefix)!.sort((a, b) => a[0] - b[0]);
    const networks: number[] = [];
    const starts: number[] = [];
    for (const [network, payload] of list) {
      if (networks.length === 0 || networks[networks.length - 1] !== network) {
        networks.push(network);
        starts.push(payloads.length);
      }
      payloads.push(payload);
    }
    starts.push(payloads.length);
    levels.push({
      mask: V4_MASKS[prefix]!,
      networks: Uint32Array.from(networks),
      starts: Uint32Array.from(starts),
    });
  }
  return { levels, payloads };
}

function find(networks: Uint32Array, key: number): number {
  let lo = 0;
  let hi = networks.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = networks[mid]!;
    if (v === key) return mid;
    if (v < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

function lookupV4<T>(levels: readonly V4Level[], payloads: readonly T[], ip: number): readonly T[] {
  let found: T[] | undefined;
  for (const level of levels) {
    const i = find(level.networks, (ip & level.mask) >>> 0);
    if (i < 0) continue;
    found ??= [];
    for (let j = level.starts[i]!; j < level.starts[i + 1]!; j++) found.push(payloads[j]!);
  }
  return found ?? NONE;
}

function buildV6<T>(entries: ReadonlyArray<readonly [Cidr, T]>): Level<T>[] {
  const byPrefix = new Map<number, Map<number | string, T[]>>();
  for (const [cidr, payload] of entries) {
    if (cidr.version !== 6) continue;
    let level = byPrefix.get(cidr.prefix);
    if (!level) byPrefix.set(cidr.prefix, level = new Map());
    const key = v6Key(cidr.words, cidr.prefix);
    const list = level.get(key);
    if (list) list.push(payload);
    else level.set(key, [payload]);
  }
  return [...byPrefix.entries()]
    .sort((a, b) => b[0] - a[0])
    .map(([prefix, byNetwork]) => ({ prefix, byNetwork }));
}

function lookupV6<T>(levels: readonly Level<T>[], ip: IpAddress): readonly T[] {
  let found: T[] | undefined;
  let single: readonly T[] | undefined;
  for (const level of levels) {
    const hit = level.byNetwork.get(v6Key(ip.words, level.prefix));
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
  const v4 = buildV4(entries);
  const v6 = buildV6(entries);
  const lookup = (ip: IpAddress): readonly T[] =>
    ip.version === 4 ? lookupV4(v4.levels, v4.payloads, ip.words[0]!) : lookupV6(v6, ip);
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

/** An IP allow/block list compiled for the data plane; see {@link buildIpList}. */
export interface IpList {
  /** Number of entries. */
  readonly size: number;
  /**
   * The deciding entry for a request: entries must match the site (or be global), the path
   * prefix and not be expired. An allow entry wins over a block entry, so an operator who allows
   * their own addresses is never locked out by a broader block range.
   */
  match(ip: IpAddress, siteId: string, path: string, now: number): IpListEntry | undefined;
}

/** Concatenated strings with offsets: one string and one typed array instead of n strings. */
function packStrings(values: readonly string[]): { text: string; offsets: Uint32Array } {
  const offsets = new Uint32Array(values.length + 1);
  let at = 0;
  values.forEach((v, i) => {
    offsets[i] = at;
    at += v.length;
  });
  offsets[values.length] = at;
  return { text: values.join(""), offsets };
}

/** Small lists of distinct values (sites, path prefixes) referenced by index; 0 means null. */
function intern(values: ReadonlyArray<string | null>): { table: string[]; refs: Uint32Array } {
  const table: string[] = [];
  const index = new Map<string, number>();
  const refs = new Uint32Array(values.length);
  values.forEach((v, i) => {
    if (v === null) return;
    let n = index.get(v);
    if (n === undefined) index.set(v, n = table.push(v));
    refs[i] = n;
  });
  return { table, refs };
}

/**
 * Compiles IP-list entries into columns (packed ids and networks, interned sites and path
 * prefixes, typed actions and expiries) behind an {@link IpSet} of entry numbers, so a list of
 * 100,000 entries holds a handful of objects the garbage collector must trace, not 100,000
 * entry objects with their strings. The entry object is rebuilt only for a request that hits.
 */
export function buildIpList(entries: ReadonlyArray<readonly [Cidr, IpListEntry]>): IpList {
  const ids = packStrings(entries.map(([, e]) => e.id));
  const cidrs = packStrings(entries.map(([, e]) => e.cidr));
  const sites = intern(entries.map(([, e]) => e.siteId));
  const prefixes = intern(entries.map(([, e]) => e.pathPrefix));
  const allow = Uint8Array.from(entries, ([, e]) => e.action === "allow" ? 1 : 0);
  const expires = Float64Array.from(entries, ([, e]) => e.expiresAt ?? NaN);
  const set = buildIpSet(entries.map(([cidr], i) => [cidr, i] as const));
  const slice = (p: { text: string; offsets: Uint32Array }, i: number) =>
    p.text.slice(p.offsets[i]!, p.offsets[i + 1]!);
  const entry = (i: number): IpListEntry => {
    const site = sites.refs[i]!;
    const prefix = prefixes.refs[i]!;
    const expiry = expires[i]!;
    return {
      id: slice(ids, i),
      action: allow[i] ? "allow" : "block",
      cidr: slice(cidrs, i),
      siteId: site === 0 ? null : sites.table[site - 1]!,
      pathPrefix: prefix === 0 ? null : prefixes.table[prefix - 1]!,
      expiresAt: Number.isNaN(expiry) ? null : expiry,
    };
  };
  return {
    size: entries.length,
    match(ip, siteId, path, now) {
      let block: number | undefined;
      for (const i of set.lookup(ip)) {
        const site = sites.refs[i]!;
        if (site !== 0 && sites.table[site - 1] !== siteId) continue;
        if (expires[i]! <= now) continue;
        const prefix = prefixes.refs[i]!;
        if (prefix !== 0 && !path.startsWith(prefixes.table[prefix - 1]!)) continue;
        if (allow[i]) return entry(i);
        block ??= i;
      }
      return block === undefined ? undefined : entry(block);
    },
  };
}
