/**
 * IP allow/block lists compiled for the data plane, and kept current by applying each change
 * instead of compiling every entry again.
 *
 * A list is a base compiled in full (columns behind an IP set of entry numbers), the base
 * entries dropped since (removed or replaced), and the entries added since (new ones and new
 * versions), compiled on their own. A change of k entries costs the k entries and the added ones
 * (at most {@link pendingLimit} of the list's size), not the list; past that the added and dropped
 * entries are folded into a new base, off the event loop (`mod/protection/ip_list_fold_thread.ts`). Every part
 * is plain data ({@link IpListState}) in shared memory (`SharedArrayBuffer`), so a data-plane
 * worker maps a base instead of copying it, and receives only what changed since.
 */
import { type NormalPath, underPrefix } from "./path_normalize.ts";
import type { Cidr, IpAddress } from "./ip_address.ts";
import { buildIpTables, type IpLevel, type IpTables, matchRanges } from "./ip_set.ts";

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
 * An entry's place in the store's order (`ORDER BY position, created_at, id`): among the
 * entries of one network the first in this order decides, so a list updated by changes must
 * compare an added entry with the base's ones the way a full build would have ordered them.
 */
export interface IpListOrder {
  readonly position: number;
  readonly createdAt: number;
}

/** An entry with its parsed network and, optionally, its store order (else: its index). */
export type IpListItem = readonly [Cidr, IpListEntry, IpListOrder?];

/** An IP allow/block list compiled for the data plane; see {@link buildIpList}. */
export interface IpList {
  /** Number of entries. */
  readonly size: number;
  /**
   * The deciding entry for a request: entries must match the site (or be global), the path
   * prefix and not be expired. An allow entry wins over a block entry, so an operator who allows
   * their own addresses is never locked out by a broader block range. Among entries of the same
   * kind, the most specific network decides, then the first in store order. The path is the
   * request's normalised path (its prefix compared as the site's upstream compares paths), or a
   * plain string compared as it is.
   */
  match(
    ip: IpAddress,
    siteId: string,
    path: string | NormalPath,
    now: number,
  ): IpListEntry | undefined;
  /** The compiled list as plain data, for {@link ipListOf} on another thread. */
  readonly state: IpListState;
}

/**
 * Concatenated strings with offsets: their UTF-16 code units in one typed array (shared memory
 * crosses to a worker without a copy, a string would be copied) instead of n strings.
 */
export interface PackedStrings {
  readonly codes: Uint16Array;
  readonly offsets: Uint32Array;
}

/** Small lists of distinct values (sites, path prefixes) referenced by index; 0 means null. */
export interface Interned {
  readonly table: readonly string[];
  readonly refs: Uint32Array;
}

/**
 * Compiled entries as plain data: typed arrays in shared memory and two short lists, by entry
 * number (entry numbers follow the store order).
 */
export interface IpListTables {
  readonly ids: PackedStrings;
  readonly cidrs: PackedStrings;
  readonly sites: Interned;
  readonly prefixes: Interned;
  /** 1 for allow, 0 for block. */
  readonly allow: Uint8Array;
  /** Expiry in epoch milliseconds; NaN for never. */
  readonly expires: Float64Array;
  /** The network's prefix length. */
  readonly bits: Uint8Array;
  /** Store order: position, then creation time (then the id). */
  readonly positions: Float64Array;
  readonly created: Float64Array;
  /** The networks, with entry numbers as payloads. */
  readonly set: IpTables<Uint32Array>;
}

/**
 * A compiled list as plain data: what `postMessage` sends to a data-plane worker (the typed
 * arrays' memory is shared, not copied), which wraps it with {@link ipListOf}; it never parses or
 * sorts the entries itself. After a change only `dropped` and `added` are new (the base is the
 * same object until the next fold).
 */
export interface IpListState {
  readonly base: IpListTables;
  /** Base entry numbers removed or replaced since the base was built, each once. */
  readonly dropped?: Uint32Array;
  /** Entries added or replaced since, in store order. */
  readonly added?: IpListTables;
}

type Ctor<T> = { new (buffer: SharedArrayBuffer): T; readonly BYTES_PER_ELEMENT: number };

/** A zeroed typed array of `length` elements in shared memory. */
export function shared<T>(Ctor: Ctor<T>, length: number): T {
  return new Ctor(new SharedArrayBuffer(length * Ctor.BYTES_PER_ELEMENT));
}

/** `values` copied into shared memory. */
export function sharedFrom<T extends { set(a: ArrayLike<number>): void }>(
  Ctor: Ctor<T>,
  values: ArrayLike<number>,
): T {
  const out = shared(Ctor, values.length);
  out.set(values);
  return out;
}

function packStrings(values: readonly string[]): PackedStrings {
  const offsets = shared(Uint32Array, values.length + 1);
  let at = 0;
  values.forEach((v, i) => {
    offsets[i] = at;
    at += v.length;
  });
  offsets[values.length] = at;
  const codes = shared(Uint16Array, at);
  values.forEach((v, i) => {
    for (let k = 0, o = offsets[i]!; k < v.length; k++) codes[o + k] = v.charCodeAt(k);
  });
  return { codes, offsets };
}

function intern(values: ReadonlyArray<string | null>): Interned {
  const table: string[] = [];
  const index = new Map<string, number>();
  const refs = shared(Uint32Array, values.length);
  values.forEach((v, i) => {
    if (v === null) return;
    let n = index.get(v);
    if (n === undefined) index.set(v, n = table.push(v));
    refs[i] = n;
  });
  return { table, refs };
}

/** Arrays of each length up to 256, reused to decode a string of that length. */
const scratch: number[][] = Array.from({ length: 257 }, (_, n) => new Array<number>(n).fill(0));

/** String `i` of `p`. */
export function slice(p: PackedStrings, i: number): string {
  const from = p.offsets[i]!;
  const to = p.offsets[i + 1]!;
  const codes = p.codes;
  if (to - from <= 256) {
    const units = scratch[to - from]!;
    for (let k = 0; k < units.length; k++) units[k] = codes[from + k]!;
    return String.fromCharCode.apply(null, units);
  }
  let out = "";
  for (let at = from; at < to; at += 4096) {
    const part = codes.subarray(at, Math.min(to, at + 4096));
    out += String.fromCharCode.apply(null, part as unknown as number[]);
  }
  return out;
}

/** String `i` of `a` against string `j` of `b` as JavaScript compares strings (UTF-16 units). */
export function compareStrings(a: PackedStrings, i: number, b: PackedStrings, j: number): number {
  const x = a.offsets[i]!;
  const m = a.offsets[i + 1]! - x;
  const y = b.offsets[j]!;
  const n = b.offsets[j + 1]! - y;
  for (let k = 0; k < m && k < n; k++) {
    const d = a.codes[x + k]! - b.codes[y + k]!;
    if (d !== 0) return d;
  }
  return m - n;
}

/** Entries as columns in shared memory; `items` are in store order. */
export function buildTables(items: readonly IpListItem[]): IpListTables {
  const set = buildIpTables(items.map(([cidr], i) => [cidr, i] as const));
  const level = (l: IpLevel): IpLevel => ({
    prefix: l.prefix,
    networks: sharedFrom(Uint32Array, l.networks),
    starts: sharedFrom(Uint32Array, l.starts),
  });
  const column = <T extends { set(a: ArrayLike<number>): void }>(
    Ctor: Ctor<T>,
    value: (item: IpListItem, i: number) => number,
  ) => sharedFrom(Ctor, items.map(value));
  return {
    ids: packStrings(items.map(([, e]) => e.id)),
    cidrs: packStrings(items.map(([, e]) => e.cidr)),
    sites: intern(items.map(([, e]) => e.siteId)),
    prefixes: intern(items.map(([, e]) => e.pathPrefix)),
    allow: column(Uint8Array, ([, e]) => e.action === "allow" ? 1 : 0),
    expires: column(Float64Array, ([, e]) => e.expiresAt ?? NaN),
    bits: column(Uint8Array, ([c]) => c.prefix),
    positions: column(Float64Array, ([, , o], i) => o?.position ?? i),
    created: column(Float64Array, ([, , o]) => o?.createdAt ?? 0),
    set: {
      size: set.size,
      v4: set.v4.map(level),
      v6: set.v6.map(level),
      payloads: sharedFrom(Uint32Array, set.payloads),
    },
  };
}

/**
 * Compiles IP-list entries (in store order) into columns (packed ids and networks, interned
 * sites and path prefixes, typed actions and expiries) behind an IP set of entry numbers,
 * so a list of 100,000 entries holds a handful of objects the garbage collector must trace, not
 * 100,000 entry objects with their strings. The entry object is rebuilt only for a request that
 * hits.
 */
export function buildIpList(items: readonly IpListItem[]): IpList {
  return ipListOf({ base: buildTables(items) });
}

/** Entry `i` of `t` as an object: built only for a request that hits it. */
function decode(t: IpListTables, i: number): IpListEntry {
  const site = t.sites.refs[i]!;
  const prefix = t.prefixes.refs[i]!;
  const expiry = t.expires[i]!;
  return {
    id: slice(t.ids, i),
    action: t.allow[i] ? "allow" : "block",
    cidr: slice(t.cidrs, i),
    siteId: site === 0 ? null : t.sites.table[site - 1]!,
    pathPrefix: prefix === 0 ? null : t.prefixes.table[prefix - 1]!,
    expiresAt: Number.isNaN(expiry) ? null : expiry,
  };
}

/**
 * Entry numbers as an open-addressing hash set, sized by its numbers (a few hundred dropped
 * entries), not by the list: a mask of the list's length cost every change a pass over it.
 */
interface NumberSet {
  readonly slots: Int32Array;
  readonly shift: number;
}

function numberSet(values: Uint32Array): NumberSet {
  let bits = 3;
  while (1 << bits < values.length * 2) bits++;
  const slots = new Int32Array(1 << bits).fill(-1);
  const mask = slots.length - 1;
  const shift = 32 - bits;
  for (const v of values) {
    let h = Math.imul(v, 0x9e3779b1) >>> shift;
    while (slots[h] !== -1 && slots[h] !== v) h = (h + 1) & mask;
    slots[h] = v;
  }
  return { slots, shift };
}

function holds(set: NumberSet, v: number): boolean {
  const { slots, shift } = set;
  const mask = slots.length - 1;
  for (let h = Math.imul(v, 0x9e3779b1) >>> shift; slots[h] !== -1; h = (h + 1) & mask) {
    if (slots[h] === v) return true;
  }
  return false;
}

/**
 * Entries already built, by tables (kept while the tables are: a base across the changes until
 * its fold) and entry number. Decoding the id and network from shared memory costs a few hundred
 * nanoseconds, slicing a string did not; a client listed once is usually seen again. At most
 * {@link CACHED} per tables, then started afresh.
 */
const built = new WeakMap<IpListTables, Map<number, IpListEntry>>();
const CACHED = 4096;

function cacheOf(t: IpListTables): Map<number, IpListEntry> {
  let cache = built.get(t);
  if (cache === undefined) built.set(t, cache = new Map());
  return cache;
}

/** Entry `i` of a part, as an object. */
function entryOf(part: Part, i: number): IpListEntry {
  let entry = part.cache.get(i);
  if (entry === undefined) {
    if (part.cache.size >= CACHED) part.cache.clear();
    entry = decode(part.t, i);
    part.cache.set(i, entry);
  }
  return entry;
}

/** The part of a list a lookup scans: its tables, the entries to skip, the entries built. */
interface Part {
  readonly t: IpListTables;
  readonly dead: NumberSet | undefined;
  readonly cache: Map<number, IpListEntry>;
}

// What `scan` found: the first applicable allow and block entry numbers, -1 for none. Module
// scratch instead of a result object: a lookup allocates nothing it does not return.
let firstAllow = -1;
let firstBlock = -1;
const ranges = new Uint32Array(2 * 129);

/** The first applicable allow and block entries of `part` for a request, in lookup order. */
function scan(
  part: Part,
  ip: IpAddress,
  siteId: string,
  path: string | NormalPath,
  now: number,
): void {
  const { t, dead } = part;
  firstAllow = -1;
  firstBlock = -1;
  const count = matchRanges(t.set, ip, ranges);
  const payloads = t.set.payloads;
  for (let r = 0; r < count; r++) {
    for (let j = ranges[r * 2]!, end = ranges[r * 2 + 1]!; j < end; j++) {
      const i = payloads[j]!;
      if (dead !== undefined && holds(dead, i)) continue;
      const site = t.sites.refs[i]!;
      if (site !== 0 && t.sites.table[site - 1] !== siteId) continue;
      if (t.expires[i]! <= now) continue;
      const prefix = t.prefixes.refs[i]!;
      if (prefix !== 0) {
        const p = t.prefixes.table[prefix - 1]!;
        if (typeof path === "string" ? !path.startsWith(p) : !underPrefix(path, p)) continue;
      }
      if (t.allow[i]) {
        firstAllow = i;
        return;
      }
      if (firstBlock < 0) firstBlock = i;
    }
  }
}

/** True when entry `i` of `a` comes before entry `j` of `b` in lookup order. */
function before(a: IpListTables, i: number, b: IpListTables, j: number): boolean {
  const d = b.bits[j]! - a.bits[i]! || a.positions[i]! - b.positions[j]! ||
    a.created[i]! - b.created[j]!;
  return d !== 0 ? d < 0 : compareStrings(a.ids, i, b.ids, j) < 0;
}

/** The first of base entry `i` and added entry `j` (either -1 for none), as an entry. */
function first(base: Part, i: number, added: Part, j: number): IpListEntry | undefined {
  if (i < 0) return j < 0 ? undefined : entryOf(added, j);
  if (j < 0 || before(base.t, i, added.t, j)) return entryOf(base, i);
  return entryOf(added, j);
}

const FILTER_BITS = 14;
const V4_MASKS = Uint32Array.from(
  { length: 33 },
  (_, p) => p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0,
);

function mix(h: number, word: number): number {
  h = Math.imul(h ^ word, 0x85ebca6b);
  return h ^ (h >>> 15);
}

/** Per prefix length, what an IPv4 network's key is salted with. */
const V4_SALTS = Uint32Array.from({ length: 33 }, (_, p) => Math.imul(p + 1, 0x85ebca6b));

/** An IPv4 network's filter bit: its masked address, salted by prefix length, hashed. */
function bit4(address: number, prefix: number): number {
  return Math.imul((address & V4_MASKS[prefix]!) ^ V4_SALTS[prefix]!, 0x9e3779b1) >>>
    (32 - FILTER_BITS);
}

/** The same for IPv6: the four masked words. */
function bit6(words: ArrayLike<number>, prefix: number): number {
  let h = Math.imul(prefix + 1, 0x9e3779b1);
  for (let w = 0; w < 4; w++) {
    const keep = prefix - w * 32;
    const mask = keep >= 32 ? 0xffffffff : keep <= 0 ? 0 : V4_MASKS[keep]!;
    h = mix(h, (words[w]! & mask) >>> 0);
  }
  return Math.imul(h, 0xc2b2ae35) >>> (32 - FILTER_BITS);
}

/**
 * A Bloom filter (one hash, 2^14 bits) over the added part's networks: most requests match none
 * of a few hundred added entries, and one hash per prefix length present rules them out faster
 * than searching the added tables, so a list with changes pending looks up as fast as before.
 */
function addedFilter(added: IpListTables): (ip: IpAddress) => boolean {
  const bits = new Uint32Array(1 << (FILTER_BITS - 5));
  const set = (b: number) => void (bits[b >>> 5]! |= 1 << (b & 31));
  for (const level of added.set.v4) for (const n of level.networks) set(bit4(n, level.prefix));
  for (const level of added.set.v6) {
    for (let n = 0; n < level.networks.length; n += 4) {
      set(bit6(level.networks.subarray(n, n + 4), level.prefix));
    }
  }
  const v4 = Uint8Array.from(added.set.v4, (l) => l.prefix);
  const v6 = Uint8Array.from(added.set.v6, (l) => l.prefix);
  const has = (b: number) => (bits[b >>> 5]! & (1 << (b & 31))) !== 0;
  return (ip) => {
    const words = ip.words;
    if (ip.version === 4) {
      const address = words[0]!;
      for (let k = 0; k < v4.length; k++) if (has(bit4(address, v4[k]!))) return true;
      return false;
    }
    for (let k = 0; k < v6.length; k++) if (has(bit6(words, v6[k]!))) return true;
    return false;
  };
}

/** The list over its state built here or received from another thread. */
export function ipListOf(state: IpListState): IpList {
  const { base: t, dropped, added } = state;
  const dead = dropped !== undefined && dropped.length > 0 ? numberSet(dropped) : undefined;
  const base: Part = { t, dead, cache: cacheOf(t) };
  const size = t.allow.length - (dropped?.length ?? 0) + (added?.allow.length ?? 0);
  if (added === undefined || added.allow.length === 0) {
    return {
      size,
      state,
      match(ip, siteId, path, now) {
        scan(base, ip, siteId, path, now);
        const i = firstAllow >= 0 ? firstAllow : firstBlock;
        return i < 0 ? undefined : entryOf(base, i);
      },
    };
  }
  const more: Part = { t: added, dead: undefined, cache: cacheOf(added) };
  const mayMatch = addedFilter(added);
  return {
    size,
    state,
    match(ip, siteId, path, now) {
      scan(base, ip, siteId, path, now);
      const allow = firstAllow;
      const block = firstBlock;
      if (!mayMatch(ip)) {
        const i = allow >= 0 ? allow : block;
        return i < 0 ? undefined : entryOf(base, i);
      }
      scan(more, ip, siteId, path, now);
      if (allow >= 0 || firstAllow >= 0) return first(base, allow, more, firstAllow);
      return first(base, block, more, firstBlock);
    },
  };
}
