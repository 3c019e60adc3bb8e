/**
 * The IP list's fold: the base without its dropped entries and with the added ones, by merging
 * the sorted tables in one pass (no parsing, no sorting), as a full build would compile them, and
 * the id table the thread that swaps the new base in looks entries up by. Pure: tables in, tables
 * out; `mod/protection/ip_list_updater.ts` decides when to fold, and
 * `mod/protection/ip_list_fold_thread.ts` where.
 */
import type { IpLevel, IpTables } from "./ip_set.ts";
import {
  compareStrings,
  type Interned,
  type IpListTables,
  type PackedStrings,
  shared,
} from "./ip_list.ts";

/**
 * How many added and dropped entries a list of `size` base entries carries before they are
 * folded into a new base. A change compiles the added part again (up to this many entries) and a
 * fold passes over every entry once per this many changes, so the square root balances the two;
 * the floor keeps small lists from folding at every change.
 */
export function pendingLimit(size: number): number {
  return Math.max(256, Math.ceil(Math.sqrt(size)));
}

/** FNV-1a over `codes[from, to)`. */
function hashRange(codes: ArrayLike<number>, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let k = from; k < to; k++) h = Math.imul(h ^ codes[k]!, 0x01000193);
  return h >>> 0;
}

/** FNV-1a over a string's code units, the same hash as {@link hashRange}. */
function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < text.length; k++) h = Math.imul(h ^ text.charCodeAt(k), 0x01000193);
  return h >>> 0;
}

/**
 * An open-addressing table of entry numbers by id over the packed ids (no string per entry), in
 * shared memory: the thread that folds a base builds it too, so the thread that swaps the new
 * base in does not pass over every entry.
 */
export function idSlots(ids: PackedStrings): Int32Array {
  const { codes, offsets } = ids;
  const count = offsets.length - 1;
  let size = 16;
  while (size < count * 2) size *= 2;
  const mask = size - 1;
  const slots = shared(Int32Array, size).fill(-1);
  for (let i = 0; i < count; i++) {
    let h = hashRange(codes, offsets[i]!, offsets[i + 1]!) & mask;
    while (slots[h] !== -1) h = (h + 1) & mask;
    slots[h] = i;
  }
  return slots;
}

/** Base entry numbers by id, over {@link idSlots}. */
export function idIndex(ids: PackedStrings, slots: Int32Array): (id: string) => number {
  const { codes, offsets } = ids;
  const mask = slots.length - 1;
  return (id) => {
    let h = hashString(id) & mask;
    for (let i = slots[h]!; i !== -1; h = (h + 1) & mask, i = slots[h]!) {
      const at = offsets[i]!;
      if (offsets[i + 1]! - at !== id.length) continue;
      let k = 0;
      while (k < id.length && codes[at + k] === id.charCodeAt(k)) k++;
      if (k === id.length) return i;
    }
    return -1;
  };
}

/** True when entry `i` of `a` comes before entry `j` of `b` in store order. */
function storeBefore(a: IpListTables, i: number, b: IpListTables, j: number): boolean {
  const d = a.positions[i]! - b.positions[j]! || a.created[i]! - b.created[j]!;
  return d !== 0 ? d < 0 : compareStrings(a.ids, i, b.ids, j) < 0;
}

/**
 * Where each entry of a fold comes from: `added[k]` 1 for the added tables, 0 for the base;
 * `index[k]` its entry number there. New entry numbers follow the store order.
 */
interface Sources {
  readonly added: Uint8Array;
  readonly index: Uint32Array;
  readonly newOfBase: Int32Array;
  readonly newOfAdded: Int32Array;
}

function sources(base: IpListTables, dead: Uint8Array, added: IpListTables): Sources {
  const nb = base.allow.length;
  const na = added.allow.length;
  let live = 0;
  for (let i = 0; i < nb; i++) live += 1 - dead[i]!;
  const total = live + na;
  const out = {
    added: new Uint8Array(total),
    index: new Uint32Array(total),
    newOfBase: new Int32Array(nb).fill(-1),
    newOfAdded: new Int32Array(na),
  };
  let i = 0;
  let j = 0;
  for (let k = 0; k < total; k++) {
    while (i < nb && dead[i] === 1) i++;
    if (j >= na || (i < nb && storeBefore(base, i, added, j))) {
      out.newOfBase[i] = k;
      out.index[k] = i++;
    } else {
      out.newOfAdded[j] = k;
      out.added[k] = 1;
      out.index[k] = j++;
    }
  }
  return out;
}

/** The typed columns of the fold's entries, read from the base or the added tables. */
function columns(s: Sources, a: IpListTables, b: IpListTables) {
  const total = s.index.length;
  const from = s.added;
  const index = s.index;
  const allow = shared(Uint8Array, total);
  const expires = shared(Float64Array, total);
  const bits = shared(Uint8Array, total);
  const positions = shared(Float64Array, total);
  const created = shared(Float64Array, total);
  for (let k = 0; k < total; k++) {
    const t = from[k] === 1 ? b : a;
    const i = index[k]!;
    allow[k] = t.allow[i]!;
    expires[k] = t.expires[i]!;
    bits[k] = t.bits[i]!;
    positions[k] = t.positions[i]!;
    created[k] = t.created[i]!;
  }
  return { allow, expires, bits, positions, created };
}

/** Packed strings of the fold: a run of base entries kept in a row is one block copy. */
function packed(s: Sources, a: PackedStrings, b: PackedStrings): PackedStrings {
  const total = s.index.length;
  const offsets = shared(Uint32Array, total + 1);
  let length = 0;
  for (let k = 0; k < total; k++) {
    const src = s.added[k] ? b : a;
    const i = s.index[k]!;
    length += src.offsets[i + 1]! - src.offsets[i]!;
  }
  const codes = shared(Uint16Array, length);
  let at = 0;
  for (let k = 0; k < total;) {
    const from = s.added[k];
    const src = from ? b : a;
    let end = k + 1;
    while (end < total && s.added[end] === from && s.index[end] === s.index[end - 1]! + 1) end++;
    const start = src.offsets[s.index[k]!]!;
    const stop = src.offsets[s.index[end - 1]! + 1]!;
    codes.set(src.codes.subarray(start, stop), at);
    for (let m = k; m < end; m++) offsets[m] = at + src.offsets[s.index[m]!]! - start;
    at += stop - start;
    k = end;
  }
  offsets[total] = at;
  return { codes, offsets };
}

/** Interned values of the fold, keeping only the values still referenced. */
function interned(s: Sources, a: Interned, b: Interned): Interned {
  const table: string[] = [];
  const index = new Map<string, number>();
  const maps = [new Uint32Array(a.table.length + 1), new Uint32Array(b.table.length + 1)];
  const refs = shared(Uint32Array, s.index.length);
  for (let k = 0; k < refs.length; k++) {
    const from = s.added[k]!;
    const src = from ? b : a;
    const r = src.refs[s.index[k]!]!;
    if (r === 0) continue;
    const map = maps[from]!;
    let n = map[r]!;
    if (n === 0) {
      const value = src.table[r - 1]!;
      n = index.get(value) ?? table.push(value);
      index.set(value, n);
      map[r] = n;
    }
    refs[k] = n;
  }
  return { table, refs };
}

/** Network `i` of `a` against network `j` of `b`, IPv4 (one word each). */
function compareV4(a: Uint32Array, i: number, b: Uint32Array, j: number): number {
  return a[i]! - b[j]!;
}

/** The same for IPv6 (four words each). */
function compareV6(a: Uint32Array, i: number, b: Uint32Array, j: number): number {
  for (let w = 0; w < 4; w++) {
    const d = a[i * 4 + w]! - b[j * 4 + w]!;
    if (d !== 0) return d;
  }
  return 0;
}

/** The payloads (entry numbers) of the fold, written level after level. */
interface Payloads {
  readonly a: Uint32Array;
  readonly b: Uint32Array;
  readonly out: Uint32Array;
  at: number;
}

/** One family's merge: where the entries come from, its words per network, the payloads. */
interface FamilyMerge {
  readonly s: Sources;
  readonly width: 1 | 4;
  readonly pay: Payloads;
}

/** One level of the fold (`la` from the base, `lb` added), or undefined when it is empty. */
function level(
  m: FamilyMerge,
  prefix: number,
  la: Pick<IpLevel, "networks" | "starts">,
  lb: Pick<IpLevel, "networks" | "starts">,
): IpLevel | undefined {
  const { s, width, pay } = m;
  const compareNetworks = width === 1 ? compareV4 : compareV6;
  const { newOfBase, newOfAdded } = s;
  const { a: payA, b: payB, out: payOut } = pay;
  const na = la.starts.length - 1;
  const nb = lb.starts.length - 1;
  const networks = new Uint32Array((na + nb) * width);
  const starts = new Uint32Array(na + nb + 1);
  let at = pay.at;
  let count = 0;
  let i = 0;
  let j = 0;
  while (i < na || j < nb) {
    const d = i >= na ? 1 : j >= nb ? -1 : compareNetworks(la.networks, i, lb.networks, j);
    const begin = at;
    // Both runs are in entry order, and new numbers keep each source's order: merge them.
    let x = d <= 0 ? la.starts[i]! : 0;
    const xEnd = d <= 0 ? la.starts[i + 1]! : 0;
    let y = d >= 0 ? lb.starts[j]! : 0;
    const yEnd = d >= 0 ? lb.starts[j + 1]! : 0;
    while (x < xEnd || y < yEnd) {
      const fromBase = x < xEnd ? newOfBase[payA[x]!]! : -1;
      if (x < xEnd && fromBase < 0) {
        x++;
        continue;
      }
      const fromAdded = y < yEnd ? newOfAdded[payB[y]!]! : -1;
      if (fromAdded < 0 || (fromBase >= 0 && fromBase < fromAdded)) {
        payOut[at++] = fromBase;
        x++;
      } else {
        payOut[at++] = fromAdded;
        y++;
      }
    }
    if (at > begin) {
      const src = d <= 0 ? la.networks : lb.networks;
      const from = (d <= 0 ? i : j) * width;
      for (let w = 0; w < width; w++) networks[count * width + w] = src[from + w]!;
      starts[count++] = begin;
    }
    if (d <= 0) i++;
    if (d >= 0) j++;
  }
  pay.at = at;
  if (count === 0) return undefined;
  starts[count] = at;
  const kept = shared(Uint32Array, count * width);
  kept.set(networks.subarray(0, count * width));
  const bounds = shared(Uint32Array, count + 1);
  bounds.set(starts.subarray(0, count + 1));
  return { prefix, networks: kept, starts: bounds };
}

const NO_LEVEL = { networks: new Uint32Array(0), starts: new Uint32Array(1) };

/** One family's levels of the fold, most specific first. */
function levels(m: FamilyMerge, a: readonly IpLevel[], b: readonly IpLevel[]): IpLevel[] {
  const prefixes = [...new Set([...a, ...b].map((l) => l.prefix))].sort((x, y) => y - x);
  const out: IpLevel[] = [];
  for (const prefix of prefixes) {
    const la = a.find((l) => l.prefix === prefix) ?? NO_LEVEL;
    const lb = b.find((l) => l.prefix === prefix) ?? NO_LEVEL;
    const merged = level(m, prefix, la, lb);
    if (merged) out.push(merged);
  }
  return out;
}

/**
 * The base without its dropped entries and with the added ones, as a full build would compile
 * them: one pass over the sorted tables.
 */
export function foldTables(
  base: IpListTables,
  dropped: Iterable<number>,
  added: IpListTables,
): IpListTables {
  const dead = new Uint8Array(base.allow.length);
  for (const i of dropped) dead[i] = 1;
  const s = sources(base, dead, added);
  const total = s.index.length;
  const pay: Payloads = {
    a: base.set.payloads,
    b: added.set.payloads,
    out: shared(Uint32Array, total),
    at: 0,
  };
  const v4 = levels({ s, width: 1, pay }, base.set.v4, added.set.v4);
  const v6 = levels({ s, width: 4, pay }, base.set.v6, added.set.v6);
  const set: IpTables<Uint32Array> = { size: total, v4, v6, payloads: pay.out };
  return {
    ids: packed(s, base.ids, added.ids),
    cidrs: packed(s, base.cidrs, added.cidrs),
    sites: interned(s, base.sites, added.sites),
    prefixes: interned(s, base.prefixes, added.prefixes),
    ...columns(s, base, added),
    set,
  };
}

/** A folded base and its id table ({@link idSlots}). */
export interface IpListFold {
  readonly tables: IpListTables;
  readonly slots: Int32Array;
}

/** The fold on this thread. */
export function foldHere(
  base: IpListTables,
  dropped: Uint32Array,
  added: IpListTables,
): IpListFold {
  const tables = foldTables(base, dropped, added);
  return { tables, slots: idSlots(tables.ids) };
}
