/**
 * Keeps a compiled IP list current on the thread that reads the store: each change drops the
 * changed entries from the base and compiles the added ones on their own (a few hundred at most),
 * and when they grow past {@link pendingLimit} they are folded into a new base by merging the
 * sorted tables in one pass (no parsing, no sorting), so no change costs a full compile.
 */
import { type IpLevel, type IpTables } from "./ip_set.ts";
import {
  buildTables,
  type Interned,
  type IpList,
  type IpListItem,
  ipListOf,
  type IpListTables,
  type PackedStrings,
  slice,
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

/** FNV-1a over `text[from, to)`. */
function hashRange(text: string, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let k = from; k < to; k++) h = Math.imul(h ^ text.charCodeAt(k), 0x01000193);
  return h >>> 0;
}

/** Base entry numbers by id: open addressing over the packed ids, no string per entry. */
function idIndex(ids: PackedStrings, count: number): (id: string) => number {
  const { text, offsets } = ids;
  let size = 16;
  while (size < count * 2) size *= 2;
  const mask = size - 1;
  const slots = new Int32Array(size).fill(-1);
  for (let i = 0; i < count; i++) {
    let h = hashRange(text, offsets[i]!, offsets[i + 1]!) & mask;
    while (slots[h] !== -1) h = (h + 1) & mask;
    slots[h] = i;
  }
  return (id) => {
    let h = hashRange(id, 0, id.length) & mask;
    for (let i = slots[h]!; i !== -1; h = (h + 1) & mask, i = slots[h]!) {
      const at = offsets[i]!;
      if (offsets[i + 1]! - at === id.length && text.startsWith(id, at)) return i;
    }
    return -1;
  };
}

/** Store order of two items (`ORDER BY position, created_at, id`). */
function storeOrder(a: IpListItem, b: IpListItem): number {
  const x = a[2]!;
  const y = b[2]!;
  return x.position - y.position || x.createdAt - y.createdAt ||
    (a[1].id < b[1].id ? -1 : a[1].id > b[1].id ? 1 : 0);
}

/** True when entry `i` of `a` comes before entry `j` of `b` in store order. */
function storeBefore(a: IpListTables, i: number, b: IpListTables, j: number): boolean {
  const d = a.positions[i]! - b.positions[j]! || a.created[i]! - b.created[j]!;
  return d !== 0 ? d < 0 : slice(a.ids, i) < slice(b.ids, j);
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
  const allow = new Uint8Array(total);
  const expires = new Float64Array(total);
  const bits = new Uint8Array(total);
  const positions = new Float64Array(total);
  const created = new Float64Array(total);
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

/** Packed strings of the fold: a run of base entries kept in a row is one slice. */
function packed(s: Sources, a: PackedStrings, b: PackedStrings): PackedStrings {
  const total = s.index.length;
  const offsets = new Uint32Array(total + 1);
  const parts: string[] = [];
  let at = 0;
  for (let k = 0; k < total;) {
    const from = s.added[k];
    const src = from ? b : a;
    let end = k + 1;
    while (end < total && s.added[end] === from && s.index[end] === s.index[end - 1]! + 1) end++;
    const start = src.offsets[s.index[k]!]!;
    const stop = src.offsets[s.index[end - 1]! + 1]!;
    parts.push(src.text.slice(start, stop));
    for (let m = k; m < end; m++) offsets[m] = at + src.offsets[s.index[m]!]! - start;
    at += stop - start;
    k = end;
  }
  offsets[total] = at;
  return { text: parts.join(""), offsets };
}

/** Interned values of the fold, keeping only the values still referenced. */
function interned(s: Sources, a: Interned, b: Interned): Interned {
  const table: string[] = [];
  const index = new Map<string, number>();
  const maps = [new Uint32Array(a.table.length + 1), new Uint32Array(b.table.length + 1)];
  const refs = new Uint32Array(s.index.length);
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

function compareNetworks(a: Uint32Array, i: number, b: Uint32Array, j: number, width: number) {
  if (width === 1) return a[i]! - b[j]!;
  for (let w = 0; w < width; w++) {
    const d = a[i * width + w]! - b[j * width + w]!;
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

/** One level of the fold (`la` from the base, `lb` added), or undefined when it is empty. */
function level(
  s: Sources,
  prefix: number,
  la: Pick<IpLevel, "networks" | "starts">,
  lb: Pick<IpLevel, "networks" | "starts">,
  width: number,
  pay: Payloads,
): IpLevel | undefined {
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
    const d = i >= na ? 1 : j >= nb ? -1 : compareNetworks(la.networks, i, lb.networks, j, width);
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
  return {
    prefix,
    networks: networks.slice(0, count * width),
    starts: starts.slice(0, count + 1),
  };
}

const NO_LEVEL = { networks: new Uint32Array(0), starts: new Uint32Array(1) };

/** One family's levels of the fold, most specific first. */
function levels(
  s: Sources,
  a: readonly IpLevel[],
  b: readonly IpLevel[],
  width: number,
  pay: Payloads,
): IpLevel[] {
  const prefixes = [...new Set([...a, ...b].map((l) => l.prefix))].sort((x, y) => y - x);
  const out: IpLevel[] = [];
  for (const prefix of prefixes) {
    const la = a.find((l) => l.prefix === prefix) ?? NO_LEVEL;
    const lb = b.find((l) => l.prefix === prefix) ?? NO_LEVEL;
    const merged = level(s, prefix, la, lb, width, pay);
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
    out: new Uint32Array(total),
    at: 0,
  };
  const v4 = levels(s, base.set.v4, added.set.v4, 1, pay);
  const v6 = levels(s, base.set.v6, added.set.v6, 4, pay);
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

/** What a base was folded from: the previous base and the patch folded into it. */
export interface IpListFold {
  readonly from: IpListTables;
  readonly dropped: Uint32Array;
  readonly added: IpListTables;
}

const folds = new WeakMap<IpListTables, IpListFold>();

/**
 * How `base` came to be, when an updater folded it: a thread holding `from` gets the same tables
 * from `foldTables(from, dropped, added)`, so a data-plane worker folds for itself instead of
 * receiving the new base (megabytes that `postMessage` would copy on the main thread).
 */
export function foldOf(base: IpListTables): IpListFold | undefined {
  return folds.get(base);
}

/** A list kept current by changes, on the thread that reads the store; see {@link ipListUpdater}. */
export interface IpListUpdater {
  /** The list as of the last change applied. */
  readonly list: IpList;
  /**
   * Applies changed entries: `current(id)` is the entry as stored now, undefined when it is gone
   * (or unusable). An id whose entry did not change is harmless. Returns the list now in force.
   */
  apply(ids: Iterable<string>, current: (id: string) => IpListItem | undefined): IpList;
}

/**
 * An updatable list over `items` (in store order, each with its order). Added entries are kept
 * as items (at most {@link pendingLimit}); the base keeps only its tables and an id index.
 */
export function ipListUpdater(items: readonly IpListItem[]): IpListUpdater {
  let base = buildTables(items);
  let find = idIndex(base.ids, base.allow.length);
  const dropped = new Set<number>();
  const added = new Map<string, IpListItem>();
  let list = ipListOf({ base });
  return {
    get list() {
      return list;
    },
    apply(ids, current) {
      let changed = false;
      for (const id of ids) {
        changed = true;
        const i = find(id);
        if (i >= 0) dropped.add(i);
        added.delete(id);
        const item = current(id);
        if (item !== undefined) added.set(id, item);
      }
      if (!changed) return list;
      const more = buildTables([...added.values()].sort(storeOrder));
      if (added.size + dropped.size > pendingLimit(base.allow.length)) {
        const from = base;
        const gone = Uint32Array.from(dropped);
        base = foldTables(from, gone, more);
        // Only the last fold is ever sent: the record of the base before would keep it, and it
        // the one before it, every base since the first for as long as the list lives.
        folds.delete(from);
        folds.set(base, { from, dropped: gone, added: more });
        find = idIndex(base.ids, base.allow.length);
        dropped.clear();
        added.clear();
        list = ipListOf({ base });
      } else {
        list = ipListOf({
          base,
          ...(dropped.size > 0 && { dropped: Uint32Array.from(dropped) }),
          ...(added.size > 0 && { added: more }),
        });
      }
      return list;
    },
  };
}
