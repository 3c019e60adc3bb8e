/**
 * A cluster node as the controller sees it: the report of its last heartbeat (with the totals
 * summed since it joined), the state derived from that heartbeat's age, and the view the API and
 * the console show.
 */
import type { NodeRow } from "../../db/cluster_repo.ts";

export const NODE_STATES = ["enrolled", "online", "stale", "offline", "revoked"] as const;
export type NodeState = typeof NODE_STATES[number];

/** What a node reports in each heartbeat (validated at the edge). */
export interface HeartbeatReport {
  readonly version: string;
  readonly uptime_s: number;
  readonly policy_version: string | null;
  /** The node's clock (ms since the epoch) when it sent the heartbeat. */
  readonly time: number;
  /** When the node's process started (its clock); a new value means its counters restarted. */
  readonly started_at?: number;
  /** Requests by action since the node's process started. */
  readonly counters: Readonly<Record<string, number>>;
  readonly health: Readonly<Record<string, unknown>>;
}

export interface NodeView {
  readonly id: string;
  readonly name: string;
  readonly state: NodeState;
  readonly enrolled_at: string;
  readonly revoked_at: string | null;
  readonly last_heartbeat_at: string | null;
  readonly last_ip: string | null;
  readonly version: string | null;
  readonly uptime_s: number | null;
  readonly policy_version: string | null;
  /** True when the node runs the controller's current policy. */
  readonly policy_current: boolean;
  /** Milliseconds since the controller's policy changed while this node still ran an older one. */
  readonly policy_lag_ms: number | null;
  /** The node's clock minus the controller's at its last heartbeat. */
  readonly clock_skew_ms: number | null;
  /** True when that skew is beyond `time.max_offset` (a `time.offset` notification was raised). */
  readonly clock_skewed: boolean;
  /** Requests by action since the node's process started (its last report). */
  readonly counters: Readonly<Record<string, number>> | null;
  /** Requests by action since the node joined, across its restarts (summed by the controller). */
  readonly totals: Readonly<Record<string, number>> | null;
  readonly health: Readonly<Record<string, unknown>> | null;
  readonly certificate: {
    readonly serial: string;
    readonly fingerprint: string;
    expires_at: string;
  };
}

/** A heartbeat as the registry keeps it: the report, the clock skew and the totals since join. */
export type StoredReport = HeartbeatReport & {
  readonly skew: number;
  readonly totals?: Readonly<Record<string, number>>;
};

/** An instant as ISO 8601, null for null. */
export const isoTime = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();

/** The stored report of a node's last heartbeat, null before its first. */
export function storedReport(row: NodeRow): StoredReport | null {
  return row.report ? JSON.parse(row.report) as StoredReport : null;
}

/**
 * The node's totals since it joined: the previous totals plus what it counted since its previous
 * heartbeat (all of its counters when its process restarted in between).
 */
export function addToTotals(
  prev: StoredReport | null,
  report: HeartbeatReport,
): Record<string, number> {
  const restarted = prev === null || prev.started_at !== report.started_at ||
    report.uptime_s < prev.uptime_s;
  const out: Record<string, number> = { ...prev?.totals };
  for (const [k, v] of Object.entries(report.counters)) {
    const before = restarted ? 0 : prev.counters[k] ?? 0;
    out[k] = (out[k] ?? 0) + Math.max(0, v - before);
  }
  return out;
}

/** A node's state at `now`: silent for `offlineAfterMs` it is offline, for half of it stale. */
export function nodeState(row: NodeRow, now: number, offlineAfterMs: number): NodeState {
  if (row.revoked_at !== null) return "revoked";
  if (row.last_heartbeat_at === null) return "enrolled";
  const age = now - row.last_heartbeat_at;
  if (age >= offlineAfterMs) return "offline";
  if (age >= offlineAfterMs / 2) return "stale";
  return "online";
}

/** What a node's view is judged against: the registry's limits and the controller's policy. */
export interface ViewBasis {
  readonly offlineAfterMs: number;
  readonly maxSkewMs: number;
  /** The controller's current policy version and when it took effect. */
  readonly policy?: () => { readonly version: string; readonly since: number };
}

/** The view of a node at `now`. */
export function nodeView(row: NodeRow, now: number, basis: ViewBasis): NodeView {
  const report = storedReport(row);
  const policy = basis.policy?.();
  const current = policy !== undefined && report?.policy_version === policy.version;
  return {
    id: row.id,
    name: row.name,
    state: nodeState(row, now, basis.offlineAfterMs),
    enrolled_at: isoTime(row.enrolled_at)!,
    revoked_at: isoTime(row.revoked_at),
    last_heartbeat_at: isoTime(row.last_heartbeat_at),
    last_ip: row.last_ip,
    version: report?.version ?? null,
    uptime_s: report?.uptime_s ?? null,
    policy_version: report?.policy_version ?? null,
    policy_current: current,
    policy_lag_ms: policy === undefined || current ? null : Math.max(0, now - policy.since),
    clock_skew_ms: report?.skew ?? null,
    clock_skewed: report !== null && Math.abs(report.skew) > basis.maxSkewMs,
    counters: report?.counters ?? null,
    totals: report?.totals ?? report?.counters ?? null,
    health: report?.health ?? null,
    certificate: {
      serial: row.cert_serial,
      fingerprint: row.cert_fingerprint,
      expires_at: isoTime(row.cert_not_after)!,
    },
  };
}
