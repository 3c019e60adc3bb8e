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
export interface IpLevel {
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

const scratchKey = [0, 0, 0, 0];

/**
 * Where the payloads of every network containing `ip` lie in `tables.payloads`, most specific
 * first: `[start, end)` pairs written to `out` (room for 129 pairs), their count returned. The
 * lookup of {@link IpSet} without its result array: a caller filtering the payloads (the IP
 * list) allocates nothing per request.
 */
export function matchRanges(tables: IpTables<unknown>, ip: IpAddress, out: Uint32Array): number {
  let count = 0;
  if (ip.version === 4) {
    const w = ip.words[0]!;
    for (const level of tables.v4) {
      const i = find(level.networks, (w & V4_MASKS[level.prefix]!) >>> 0);
      if (i < 0) continue;
      out[count * 2] = level.starts[i]!;
      out[count * 2 + 1] = level.starts[i + 1]!;
      count++;
    }
    return count;
  }
  const words = ip.words;
  for (const level of tables.v6) {
    for (let w = 0; w < 4; w++) scratchKey[w] = (words[w]! & v6Mask(level.prefix, w)) >>> 0;
    const i = findV6(level.networks, scratchKey);
    if (i < 0) continue;
    out[count * 2] = level.starts[i]!;
    out[count * 2 + 1] = level.starts[i + 1]!;
    count++;
  }
  return count;
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
