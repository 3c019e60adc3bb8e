/**
 * The stored documents one policy build read, so data-plane workers compile the very same
 * policy without a store of their own. The main thread taps its build (sites, the protection
 * compiler's reads, API security's document) and sends the snapshot; a worker replays it into
 * the same compilers. Compiling in each worker from the snapshot beat compiling once and
 * transferring: compiled policies hold closures and RE2 matchers that cannot cross threads, and
 * the snapshot's structured clone costs less than the compile (numbers in docs/data-plane.md).
 */
import type { PolicyObjectRow } from "../../db/policy_objects_repo.ts";
import type { ProtectionSource } from "../protection/protection_compile.ts";
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
          rows[kind] = r;
          return r;
        },
        singleton(kind) {
          const v = src.singleton(kind);
          singletons[kind] = v;
          return v;
        },
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
    snapshot(version: number): PolicySnapshot {
      return { version, sites, rows, singletons, objects };
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
    } satisfies ProtectionSource,
    repo: {
      get: (kind: string, id: string) => current().objects[objectKey(kind, id)],
    },
  };
}
