/**
 * The stored documents one policy build read, so data-plane workers compile the very same
 * policy without a store of their own. The main thread taps its build (sites, the protection
 * compiler's reads, API security's document) and sends the snapshot; a worker replays it into
 * the same compilers. Compiling in each worker from the snapshot beat compiling once and
 * transferring: compiled policies hold closures and RE2 matchers that cannot cross threads, and
 * the snapshot's structured clone costs less than the compile (numbers in docs/data-plane.md).
 */
import type { PolicyObjectRow } from "../../db/policy_objects_repo.ts";
import { KIND, type ProtectionSource } from "../protection/protection_compile.ts";
import type { IpListState } from "../../engine/ip_list.ts";
import type { StoredSiteRow } from "./site_schema.ts";

export interface PolicySnapshot {
  /** The main thread's policy version this snapshot builds. */
  readonly version: number;
  readonly sites: readonly StoredSiteRow[];
  /** `source.rows(kind)` of the protection compiler, by kind. */
  readonly rows: Readonly<Record<string, readonly PolicyObjectRow[]>>;
  /** `source.singleton(kind)`, by kind. */
  readonly singletons: Readonly<Record<string, string | undefined>>;
  /** Single documents read by kind and id (API security's settings). */
  readonly objects: Readonly<Record<string, PolicyObjectRow | undefined>>;
  /**
   * The IP list as the main thread compiled it (typed arrays: a copy of bytes to send, nothing
   * to parse or sort in the worker); its rows are not in `rows`.
   */
  readonly ipList?: IpListState;
}

const objectKey = (kind: string, id: string) => `${kind}\u0000${id}`;

/** Records what a policy build reads; `snapshot` returns the last complete build's reads. */
export function createSnapshotTap() {
  let sites: readonly StoredSiteRow[] = [];
  let rows: Record<string, readonly PolicyObjectRow[]> = {};
  let singletons: Record<string, string | undefined> = {};
  let objects: Record<string, PolicyObjectRow | undefined> = {};
  return {
    /** The site rows; a build reads them first, which starts a new recording. */
    sites(list: readonly StoredSiteRow[]): readonly StoredSiteRow[] {
      sites = list;
      rows = {};
      singletons = {};
      objects = {};
      return list;
    },
    /** Wraps the protection compiler's source. */
    source(src: ProtectionSource): ProtectionSource {
      return {
        rows(kind) {
          const r = src.rows(kind);
          // The IP list goes compiled (`snapshot`'s `ipList`): 100,000 rows are not kept here.
          if (kind !== KIND.ip) rows[kind] = r;
          return r;
        },
        singleton(kind) {
          const v = src.singleton(kind);
          singletons[kind] = v;
          return v;
        },
        // The IP list's change feed is the main thread's own: what it compiles goes as `ipList`.
        ipChanges: src.ipChanges && ((limit) => src.ipChanges!(limit)),
        ipEntry: src.ipEntry && ((id) => src.ipEntry!(id)),
      };
    },
    /** Wraps a by-id document lookup. */
    get<R extends { get(kind: string, id: string): PolicyObjectRow | undefined }>(
      repo: R,
    ): Pick<R, "get"> {
      return {
        get(kind: string, id: string) {
          const row = repo.get(kind, id);
          objects[objectKey(kind, id)] = row;
          return row;
        },
      };
    },
    /** The last build's reads, with the IP list it compiled. */
    snapshot(version: number, ipList?: IpListState): PolicySnapshot {
      return { version, sites, rows, singletons, objects, ...(ipList && { ipList }) };
    },
  };
}

export type SnapshotTap = ReturnType<typeof createSnapshotTap>;

/** The sources a worker compiles from: whatever snapshot `current()` returns. */
export function replaySnapshot(current: () => PolicySnapshot) {
  return {
    listSites: (): readonly StoredSiteRow[] => current().sites,
    source: {
      rows: (kind: string) => (current().rows[kind] ?? []) as PolicyObjectRow[],
      singleton: (kind: string) => current().singletons[kind],
      ipList: () => current().ipList,
    } satisfies ProtectionSource,
    repo: {
      get: (kind: string, id: string) => current().objects[objectKey(kind, id)],
    },
  };
}

/** `kept` marks an IP list whose base the previous snapshot had: `ipPatch` is the rest. */
const IP_BASE = `${KIND.ip}:base`;

/**
 * A snapshot as sent after another: the kinds in `kept` have the rows the previous one had
 * (`KIND.ip` in `kept`: the same compiled IP list; `IP_BASE`: the same base, with `ipPatch`'s
 * dropped and added entries). A new base (a fold) goes whole: its tables are shared memory, so
 * `postMessage` copies none of their bytes, and the worker folds nothing.
 */
export interface SnapshotDelta extends PolicySnapshot {
  readonly kept: readonly string[];
  readonly ipPatch?: Omit<IpListState, "base">;
}

function sameRows(a: readonly PolicyObjectRow[], b: readonly PolicyObjectRow[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (
      x.id !== y.id || x.updated_at !== y.updated_at || x.position !== y.position ||
      x.config !== y.config
    ) return false;
  }
  return true;
}

/**
 * `next` without the row lists equal to `previous`'s: a change to one site does not send (and
 * clone) 100,000 unchanged IP entries to every worker again.
 */
export function deltaOf(previous: PolicySnapshot | undefined, next: PolicySnapshot): SnapshotDelta {
  if (previous === undefined) return { ...next, kept: [] };
  const rows: Record<string, readonly PolicyObjectRow[]> = {};
  const kept: string[] = [];
  // The compiler keeps its compiled IP list while the entries are unchanged: the same object;
  // a changed one keeps its base until the changes are folded in, and only they are sent. A
  // folded base is sent as it is (shared memory: the worker maps the main thread's tables).
  let ipList = next.ipList;
  let ipPatch: SnapshotDelta["ipPatch"];
  if (ipList !== undefined && ipList === previous.ipList) {
    kept.push(KIND.ip);
    ipList = undefined;
  } else if (ipList !== undefined && ipList.base === previous.ipList?.base) {
    kept.push(IP_BASE);
    const { base: _, ...patch } = ipList;
    ipPatch = patch;
    ipList = undefined;
  }
  for (const [kind, list] of Object.entries(next.rows)) {
    const before = previous.rows[kind];
    if (before !== undefined && sameRows(before, list)) kept.push(kind);
    else rows[kind] = list;
  }
  const { ipList: _, ...rest } = next;
  return { ...rest, rows, kept, ...(ipList && { ipList }), ...(ipPatch && { ipPatch }) };
}

/** The full snapshot a delta stands for, given the one before it. */
export function applyDelta(previous: PolicySnapshot, delta: SnapshotDelta): PolicySnapshot {
  const rows: Record<string, readonly PolicyObjectRow[]> = { ...delta.rows };
  let ipList = delta.ipList;
  for (const kind of delta.kept) {
    if (kind === KIND.ip) ipList = previous.ipList;
    else if (kind === IP_BASE) ipList = { ...delta.ipPatch, base: previous.ipList!.base };
    else rows[kind] = previous.rows[kind] ?? [];
  }
  return {
    version: delta.version,
    sites: delta.sites,
    rows,
    singletons: delta.singletons,
    objects: delta.objects,
    ...(ipList && { ipList }),
  };
}
