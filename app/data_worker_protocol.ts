/**
 * The messages between the main thread and its data-plane workers (`app/data_workers.ts`, each
 * thread `app/data_worker.ts`): what a worker starts from, what it is told, what it reports.
 */
import type { Config } from "../mod/config/config.ts";
import type { DeploymentKeys } from "../mod/core/deployment_keys.ts";
import type { LogFields, LogLevel } from "../mod/core/logger.ts";
import type { AccessRecord } from "../mod/access_log/record.ts";
import type { PolicySnapshot, SnapshotDelta } from "../mod/data_plane/policy_snapshot.ts";
import type { CountsDelta } from "../mod/data_plane/site_counters.ts";
import type { SharedStateBuffers } from "../mod/data_plane/shared_state.ts";
import type { Inspection } from "../engine/types.ts";
import type { AlapPolicyDoc } from "../mod/protection/protection_schema.ts";
import type { Sample } from "../mod/apisec/inventory.ts";
import type { EdgeCache } from "../mod/protection/edge_cache.ts";
import type { ListenerConnections } from "../mod/core/connection_stats.ts";

/** What a worker needs to start. */
export interface WorkerInit {
  /** 1..N; also the owner id of the shared-memory locks it holds. */
  readonly index: number;
  readonly config: Config;
  readonly dataDir: string;
  /** The deployment's keys (key files are read by the worker on first use, as on the main thread). */
  readonly keys: DeploymentKeys;
  readonly shared: SharedStateBuffers;
  /** The process's order of upstream health events (`healthOrderBuffer`). */
  readonly healthOrder: SharedArrayBuffer;
  readonly challengeSecret: Uint8Array;
  readonly snapshot: PolicySnapshot;
  /** Pending ACME HTTP-01 answers: [host, token, key authorisation]. */
  readonly acme: ReadonlyArray<readonly [string, string, string]>;
  readonly http: { readonly hostname: string; readonly port: number };
  readonly https?: { readonly hostname: string; readonly port: number };
  /** Workers sharing the ports: each front takes its share of the connection caps. */
  readonly workers: number;
}

export type ToWorker =
  | { readonly t: "init"; readonly init: WorkerInit }
  | { readonly t: "policy"; readonly delta: SnapshotDelta }
  | {
    readonly t: "purge";
    /** Answered with `purged` and this id (0: nobody waits for the answer). */
    readonly id: number;
    readonly siteId: string | null;
    readonly pathPrefix: string | null;
  }
  | { readonly t: "drain" }
  | { readonly t: "flush"; readonly id: number }
  | { readonly t: "crash" }
  | { readonly t: "stall"; readonly ms: number }
  | {
    readonly t: "acme";
    readonly host: string;
    readonly token: string;
    /** The key authorisation to answer, or null when the token is withdrawn. */
    readonly answer: string | null;
  };

/** A worker's edge-cache counters as it reports them. */
export type CacheStats = ReturnType<EdgeCache["stats"]>;
export type UpstreamOk = readonly [
  siteId: string,
  origin: string,
  lastOkAt: number,
  /** Its stamp in the process's order of health events (`healthOrder`). */
  okSeq: number,
];
export type AlapArgs = [string, string, string, Inspection, AlapPolicyDoc];

export type FromWorker =
  | { readonly t: "ack"; readonly version: number }
  | {
    readonly t: "records";
    /** The batch's verdicts' access-log rows as text (`mod/access_log/lines.ts`). */
    readonly lines: string;
    readonly count: number;
    /** Its passed requests' rows, apart, so the main thread may sample them. */
    readonly passLines: string;
    readonly passCount: number;
    /** The passed rows by site name (`""`: no site matched). */
    readonly passSites: Array<[string, number]>;
    /** The records the main thread's events and realtime feed see (`isEventRecord`). */
    readonly events: AccessRecord[];
    /** What the batch's requests added to the site counters. */
    readonly counts: CountsDelta[];
    /** ALAP observations (requests with findings) and API-discovery samples, in order. */
    readonly alap: AlapArgs[];
    readonly samples: Sample[];
  }
  | {
    readonly t: "upstream";
    readonly site: { readonly id: string; readonly name: string };
    readonly upstream: {
      readonly origin: string;
      readonly failures: number;
      readonly downUntil: number;
    };
    readonly event: "down" | "failure" | "up";
    /**
     * Where it falls in the process's order of health events, not the wall clock
     * (`healthOrder`; the main thread merges reports by it, `upstream_mirror.ts`).
     */
    readonly seq: number;
  }
  /** Upstreams that answered since the last report: the last answer's time and stamp. */
  | { readonly t: "upstream_ok"; readonly oks: readonly UpstreamOk[] }
  | { readonly t: "log"; readonly level: LogLevel; readonly message: string; fields: LogFields }
  | { readonly t: "cache"; readonly stats: CacheStats }
  | { readonly t: "connections"; readonly stats: ListenerConnections }
  | { readonly t: "failed"; readonly error: string }
  | { readonly t: "flushed"; readonly id: number }
  | { readonly t: "purged"; readonly id: number; readonly count: number }
  | { readonly t: "drained" };
