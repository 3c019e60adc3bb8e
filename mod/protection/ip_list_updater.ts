/**
 * Keeps a compiled IP list current on the thread that reads the store: each change drops the
 * changed entries from the base and compiles the added ones on their own (a few hundred at most),
 * and when they grow past {@link pendingLimit} they are folded into a new base
 * (`engine/ip_list_fold.ts`), so no change costs a full compile. The fold runs where the
 * {@link IpListFolder} puts it (the server's: a thread of its own, see `ip_list_fold_thread.ts`);
 * the base and the pending changes serve until the new base is complete, and the next change
 * swaps it in.
 */
import {
  buildTables,
  type IpList,
  type IpListItem,
  ipListOf,
  type IpListTables,
} from "../../engine/ip_list.ts";
import {
  foldHere,
  idIndex,
  idSlots,
  type IpListFold,
  pendingLimit,
} from "../../engine/ip_list_fold.ts";

/** Store order of two items (`ORDER BY position, created_at, id`). */
function storeOrder(a: IpListItem, b: IpListItem): number {
  const x = a[2]!;
  const y = b[2]!;
  return x.position - y.position || x.createdAt - y.createdAt ||
    (a[1].id < b[1].id ? -1 : a[1].id > b[1].id ? 1 : 0);
}

/**
 * Folds `dropped` and `added` into `base` (`foldTables`), here or elsewhere: a result (on
 * this thread, the caller waits) or a promise of one (another thread; the list keeps serving the
 * base with its changes meanwhile).
 */
export type IpListFolder =
  & ((base: IpListTables, dropped: Uint32Array, added: IpListTables) =>
    | IpListFold
    | Promise<IpListFold>)
  & {
    /** Told each full build's size: a folder on another thread starts it then, not in a fold. */
    readonly prepare?: (size: number) => void;
  };

/** A list kept current by changes, on the thread that reads the store; see {@link ipListUpdater}. */
export interface IpListUpdater {
  /** The list as of the last change applied. */
  readonly list: IpList;
  /** True while a fold started by a change is not yet swapped in. */
  readonly folding: boolean;
  /**
   * Applies changed entries: `current(id)` is the entry as stored now, undefined when it is gone
   * (or unusable). An id whose entry did not change is harmless. Returns the list now in force.
   */
  apply(ids: Iterable<string>, current: (id: string) => IpListItem | undefined): IpList;
}

/** A fold under way: the ids changed since it started, and its result once there. */
interface Folding {
  readonly since: Set<string>;
  done?: IpListFold;
}

/**
 * An updatable list over `items` (in store order, each with its order). Added entries are kept
 * as items (at most {@link pendingLimit}, more while a fold is under way); the base keeps only
 * its tables and an id index. `fold` folds them into a new base when they pass the limit
 * (default: here, in the change that passes it).
 */
export function ipListUpdater(
  items: readonly IpListItem[],
  fold: IpListFolder = foldHere,
): IpListUpdater {
  fold.prepare?.(items.length);
  let base = buildTables(items);
  let find = idIndex(base.ids, idSlots(base.ids));
  let dropped = new Set<number>();
  let added = new Map<string, IpListItem>();
  let folding: Folding | undefined;
  let list = ipListOf({ base });
  /**
   * The new base in force: it holds the base without the entries dropped when the fold started
   * and with the ones added then. An id changed since is dropped from it again and keeps its
   * pending version (if any); every other entry is in it as it is in force.
   */
  const swap = (done: IpListFold, since: ReadonlySet<string>) => {
    base = done.tables;
    find = idIndex(base.ids, done.slots);
    const drop = new Set<number>();
    const keep = new Map<string, IpListItem>();
    for (const id of since) {
      const i = find(id);
      if (i >= 0) drop.add(i);
      const item = added.get(id);
      if (item !== undefined) keep.set(id, item);
    }
    dropped = drop;
    added = keep;
    folding = undefined;
  };
  const start = (more: IpListTables): boolean => {
    const job: Folding = { since: new Set() };
    folding = job;
    const result = fold(base, Uint32Array.from(dropped), more);
    if (!(result instanceof Promise)) {
      swap(result, job.since);
      return true;
    }
    result.then(
      (done) => void (job.done = done),
      // The list stays right without it: the next change starts another.
      () => void (folding === job && (folding = undefined)),
    );
    return false;
  };
  return {
    get list() {
      return list;
    },
    get folding() {
      return folding !== undefined;
    },
    apply(ids, current) {
      let changed = false;
      for (const id of ids) {
        changed = true;
        folding?.since.add(id);
        const i = find(id);
        if (i >= 0) dropped.add(i);
        added.delete(id);
        const item = current(id);
        if (item !== undefined) added.set(id, item);
      }
      if (!changed) return list;
      if (folding?.done !== undefined) swap(folding.done, folding.since);
      let more = buildTables([...added.values()].sort(storeOrder));
      if (folding === undefined && added.size + dropped.size > pendingLimit(base.allow.length)) {
        if (start(more)) more = buildTables([...added.values()].sort(storeOrder));
      }
      list = ipListOf({
        base,
        ...(dropped.size > 0 && { dropped: Uint32Array.from(dropped) }),
        ...(added.size > 0 && { added: more }),
      });
      return list;
    },
  };
}
