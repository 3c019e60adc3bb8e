/**
 * An immutable set of IPv4/IPv6 networks with a payload per entry, built once per policy.
 *
 * Entries are grouped by prefix length ("one table per prefix length", as routing tables do), so
 * a lookup costs one mask and one search per distinct prefix length present (at most 33 for
 * IPv4, 129 for IPv6, typically a handful) whatever the number of entries. Each table is a sorted
 * typed array (one word a network for IPv4, four for IPv6) searched in 17 steps for 100,000
 * networks; the tables are plain data, so a data-plane worker receives a compiled set as a copy
 * of bytes instead of compiling it again.
 */
import { type Cidr, type IpAddress, parseCidr, parseIp } from "./ip_address.ts";

/**
 * One prefix length's networks, without per-network objects: the masked networks sorted in a
 * typed array (one word each for IPv4, four for IPv6, most significant first), found by binary
 * search, with `starts[i]..starts[i+1]` indexing that network's payloads in the set's flat payload
 * list. 100,000 networks are two arrays instead of 100,000 map entries and arrays, which the
 * garbage collector would otherwise mark on every major collection while the data plane waits,
 * and they cross to a data-plane worker as a copy of bytes (see {@link IpTables}).
 */
interface IpLevel {
  readonly prefix: number;
  readonly networks: Uint32Array;
  readonly starts: Uint32Array;
}

/**
 * An IP set as plain data (typed arrays and the payload list): what `postMessage` copies to a
 * data-plane worker, which wraps it with {@link ipSetOf} instead of building the set again.
 */
export interface IpTables<P> {
  readonly size: number;
  /** Most specific first. */
  readonly v4: readonly IpLevel[];
  readonly v6: readonly IpLevel[];
  readonly payloads: P;
}

const V4_MASKS: readonly number[] = Array.from(
  { length: 33 },
  (_, p) => p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0,
);

/** The mask of word `i` (0..3) of an IPv6 prefix. */
function v6Mask(prefix: number, i: number): number {
  const keep = prefix - i * 32;
  return keep >= 32 ? 0xffffffff : keep <= 0 ? 0 : V4_MASKS[keep]!;
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

/**
 * Levels of one address family, most specific first, appending payloads to `payloads`; a stable
 * sort keeps duplicates of one network in insertion order. A network is its masked words.
 */
function buildLevels<T>(
  entries: ReadonlyArray<readonly [Cidr, T]>,
  version: 4 | 6,
  payloads: T[],
): IpLevel[] {
  const byPrefix = new Map<number, Array<readonly [number | number[], T]>>();
  for (const [cidr, payload] of entries) {
    if (cidr.version !== version) continue;
    let list = byPrefix.get(cidr.prefix);
    if (!list) byPrefix.set(cidr.prefix, list = []);
    const p = cidr.prefix;
    const w = cidr.words;
    list.push([
      version === 4 ? (w[0]! & V4_MASKS[p]!) >>> 0 : w.map((x, i) => (x & v6Mask(p, i)) >>> 0),
      payload,
    ]);
  }
  const compare = version === 4
    ? (a: number | number[], b: number | number[]) => (a as number) - (b as number)
    : (a: number | number[], b: number | number[]) => {
      const x = a as number[];
      const y = b as number[];
      return x[0]! - y[0]! || x[1]! - y[1]! || x[2]! - y[2]! || x[3]! - y[3]!;
    };
  const levels: IpLevel[] = [];
  for (const prefix of [...byPrefix.keys()].sort((a, b) => b - a)) {
    const list = byPrefix.get(prefix)!.sort((a, b) => compare(a[0], b[0]));
    const networks: number[] = [];
    const starts: number[] = [];
    let last: number | number[] | undefined;
    for (const [key, payload] of list) {
      if (last === undefined || compare(last, key) !== 0) {
        if (typeof key === "number") networks.push(key);
        else networks.push(...key);
        starts.push(payloads.length);
        last = key;
      }
      payloads.push(payload);
    }
    starts.push(payloads.length);
    levels.push({ prefix, networks: Uint32Array.from(networks), starts: Uint32Array.from(starts) });
  }
  return levels;
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

function findV6(networks: Uint32Array, key: readonly number[]): number {
  let lo = 0;
  let hi = networks.length / 4 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = mid * 4;
    const d = networks[at]! - key[0]! || networks[at + 1]! - key[1]! ||
      networks[at + 2]! - key[2]! || networks[at + 3]! - key[3]!;
    if (d === 0) return mid;
    if (d < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Anything indexable: the payload list, or a typed array of entry numbers. */
type Payloads<T> = { readonly [i: number]: T };

function lookupV4<T>(levels: readonly IpLevel[], payloads: Payloads<T>, ip: number): readonly T[] {
  let found: T[] | undefined;
  for (const level of levels) {
    const i = find(level.networks, (ip & V4_MASKS[level.prefix]!) >>> 0);
    if (i < 0) continue;
    found ??= [];
    for (let j = level.starts[i]!; j < level.starts[i + 1]!; j++) found.push(payloads[j]!);
  }
  return found ?? NONE;
}

function lookupV6<T>(
  levels: readonly IpLevel[],
  payloads: Payloads<T>,
  words: readonly number[],
): readonly T[] {
  let found: T[] | undefined;
  const key = [0, 0, 0, 0];
  for (const level of levels) {
    for (let w = 0; w < 4; w++) key[w] = (words[w]! & v6Mask(level.prefix, w)) >>> 0;
    const i = findV6(level.networks, key);
    if (i < 0) continue;
    found ??= [];
    for (let j = level.starts[i]!; j < level.starts[i + 1]!; j++) found.push(payloads[j]!);
  }
  return found ?? NONE;
}

/** The tables of a set: see {@link IpTables}. */
export function buildIpTables<T>(entries: ReadonlyArray<readonly [Cidr, T]>): IpTables<T[]> {
  const payloads: T[] = [];
  const v4 = buildLevels(entries, 4, payloads);
  const v6 = buildLevels(entries, 6, payloads);
  return { size: entries.length, v4, v6, payloads };
}

/** The set over tables built here or received from another thread. */
export function ipSetOf<T>(tables: IpTables<Payloads<T>>): IpSet<T> {
  const { v4, v6, payloads } = tables;
  const lookup = (ip: IpAddress): readonly T[] =>
    ip.version === 4
      ? lookupV4(v4, payloads, ip.words[0]!)
      : v6.length === 0
      ? NONE
      : lookupV6(v6, payloads, ip.words);
  return {
    size: tables.size,
    lookup,
    lookupText(text: string): readonly T[] {
      const ip = parseIp(text);
      return ip ? lookup(ip) : NONE;
    },
  };
}

/** Builds an immutable set from `[network, payload]` pairs; duplicates keep every payload. */
export function buildIpSet<T>(entries: ReadonlyArray<readonly [Cidr, T]>): IpSet<T> {
  return ipSetOf(buildIpTables(entries));
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
  /** The compiled list as plain data, for {@link ipListOf} on another thread. */
  readonly tables: IpListTables;
}

/** Concatenated strings with offsets: one string and one typed array instead of n strings. */
interface PackedStrings {
  readonly text: string;
  readonly offsets: Uint32Array;
}

/** Small lists of distinct values (sites, path prefixes) referenced by index; 0 means null. */
interface Interned {
  readonly table: readonly string[];
  readonly refs: Uint32Array;
}

/**
 * A compiled IP list as plain data: typed arrays, two long strings and two short lists. A
 * data-plane worker receives it by `postMessage` (a copy of bytes: about 20 ms for 100,000
 * entries) and wraps it with {@link ipListOf}; it never parses or sorts the entries itself.
 */
export interface IpListTables {
  readonly ids: PackedStrings;
  readonly cidrs: PackedStrings;
  readonly sites: Interned;
  readonly prefixes: Interned;
  /** 1 for allow, 0 for block, by entry number. */
  readonly allow: Uint8Array;
  /** Expiry in epoch milliseconds by entry number; NaN for never. */
  readonly expires: Float64Array;
  /** The networks, with entry numbers as payloads. */
  readonly set: IpTables<Uint32Array>;
}

function packStrings(values: readonly string[]): PackedStrings {
  const offsets = new Uint32Array(values.length + 1);
  let at = 0;
  values.forEach((v, i) => {
    offsets[i] = at;
    at += v.length;
  });
  offsets[values.length] = at;
  return { text: values.join(""), offsets };
}

function intern(values: ReadonlyArray<string | null>): Interned {
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
  const set = buildIpTables(entries.map(([cidr], i) => [cidr, i] as const));
  return ipListOf({
    ids: packStrings(entries.map(([, e]) => e.id)),
    cidrs: packStrings(entries.map(([, e]) => e.cidr)),
    sites: intern(entries.map(([, e]) => e.siteId)),
    prefixes: intern(entries.map(([, e]) => e.pathPrefix)),
    allow: Uint8Array.from(entries, ([, e]) => e.action === "allow" ? 1 : 0),
    expires: Float64Array.from(entries, ([, e]) => e.expiresAt ?? NaN),
    set: { ...set, payloads: Uint32Array.from(set.payloads) },
  });
}

/** The list over tables built here ({@link buildIpList}) or received from another thread. */
export function ipListOf(tables: IpListTables): IpList {
  const { ids, cidrs, sites, prefixes, allow, expires } = tables;
  const set = ipSetOf<number>(tables.set);
  const slice = (p: PackedStrings, i: number) => p.text.slice(p.offsets[i]!, p.offsets[i + 1]!);
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
    size: allow.length,
    tables,
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
