/**
 * The controller's node registry: authenticates each node call by its client certificate,
 * records heartbeats, derives each node's state from the time of its last heartbeat, and revokes
 * or removes nodes. A state change is published on the realtime bus (`node.status`); a node
 * going offline, and a node whose clock is off, raise notifications.
 *
 * A node call is accepted only when the certificate chains to the cluster CA, names a node that
 * is enrolled and not revoked, and its serial and fingerprint are the ones recorded at the join
 * (specification 4.2). Otherwise 401 (no or untrusted certificate) or 403 (another node's, a
 * revoked one), with an audit record.
 */
import type { ClusterRepo, NodeRow } from "../../db/cluster_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { safeEqual } from "../core/digest.ts";
import { AppError } from "../core/errors.ts";
import type { Notify } from "../core/notifications.ts";
import { certificateFacts, issuedBy } from "../tls/x509.ts";
import type { Collector } from "../monitor/exposition.ts";

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

/** The client certificate of a node call, as the cluster listener saw it. */
export interface NodeCredential {
  readonly authorized: boolean;
  readonly der: Uint8Array;
}

type Ctx = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export interface RegistryDeps {
  readonly repo: ClusterRepo;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly transaction: <T>(fn: () => T) => T;
  readonly caCert: string;
  /** A node silent this long is offline; half of it, stale. */
  readonly offlineAfterMs: number;
  /** A clock difference above this is shown and raises `node.clock_skew`. */
  readonly maxSkewMs: number;
  readonly notify?: Notify;
  /** Publishes `node.status` on the realtime bus. */
  readonly publish?: (payload: Readonly<Record<string, unknown>>) => void;
  /** The controller's current policy version and when it took effect. */
  readonly policy?: () => { readonly version: string; readonly since: number };
}

/**
 * A refusal that only an operator can end (a revoked node, or a removed one still calling) is
 * audited when it first happens and then at most once per this (1 hour) per certificate, with the
 * number of refusals in between, so a node left running cannot flood the audit log.
 */
export const REPEATED_REFUSAL_AUDIT_MS = 3_600_000;
/** Reasons of a lasting refusal (see `REPEATED_REFUSAL_AUDIT_MS`). */
const LASTING_REFUSALS: ReadonlySet<string> = new Set(["revoked", "unknown_node"]);
/** The throttle remembers at most this many certificates (only the cluster CA's can be here). */
const REFUSAL_MEMORY = 4096;

const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();

/** A heartbeat as the registry keeps it: the report, the clock skew and the totals since join. */
type StoredReport = HeartbeatReport & {
  readonly skew: number;
  readonly totals?: Readonly<Record<string, number>>;
};

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

/**
 * The controller's Prometheus metrics of its nodes: how many are in each state, each node's
 * requests by action since it joined (from its heartbeats) and its clock skew.
 */
export function registryCollector(list: () => readonly NodeView[]): Collector {
  return (out) => {
    const nodes = list();
    out.family("waf_cluster_nodes", "gauge", "Cluster nodes by state (on a controller)");
    for (const state of NODE_STATES) {
      out.sample("waf_cluster_nodes", { state }, nodes.filter((n) => n.state === state).length);
    }
    out.family(
      "waf_cluster_node_requests_total",
      "counter",
      "Requests through each cluster node since it joined, by action (from its heartbeats)",
    );
    for (const n of nodes) {
      for (const [action, v] of Object.entries(n.totals ?? {})) {
        if (action === "requests") continue;
        out.sample("waf_cluster_node_requests_total", { node: n.name, node_id: n.id, action }, v);
      }
    }
    out.family(
      "waf_cluster_node_clock_skew_seconds",
      "gauge",
      "Each cluster node's clock minus the controller's at its last heartbeat",
    );
    for (const n of nodes) {
      if (n.clock_skew_ms === null) continue;
      out.sample(
        "waf_cluster_node_clock_skew_seconds",
        { node: n.name, node_id: n.id },
        n.clock_skew_ms / 1000,
      );
    }
  };
}

/** The sum of every node's totals since join (the cluster's traffic). */
export function clusterTotals(nodes: readonly NodeView[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of nodes) {
    for (const [k, v] of Object.entries(n.totals ?? {})) out[k] = (out[k] ?? 0) + v;
  }
  return out;
}

export function createRegistry(deps: RegistryDeps) {
  const skewed = new Set<string>();

  const stateOf = (row: NodeRow, now: number): NodeState => {
    if (row.revoked_at !== null) return "revoked";
    if (row.last_heartbeat_at === null) return "enrolled";
    const age = now - row.last_heartbeat_at;
    if (age >= deps.offlineAfterMs) return "offline";
    if (age >= deps.offlineAfterMs / 2) return "stale";
    return "online";
  };

  const view = (row: NodeRow, now: number): NodeView => {
    const report = row.report ? JSON.parse(row.report) as StoredReport : null;
    const policy = deps.policy?.();
    const current = policy !== undefined && report?.policy_version === policy.version;
    return {
      id: row.id,
      name: row.name,
      state: stateOf(row, now),
      enrolled_at: iso(row.enrolled_at)!,
      revoked_at: iso(row.revoked_at),
      last_heartbeat_at: iso(row.last_heartbeat_at),
      last_ip: row.last_ip,
      version: report?.version ?? null,
      uptime_s: report?.uptime_s ?? null,
      policy_version: report?.policy_version ?? null,
      policy_current: current,
      policy_lag_ms: policy === undefined || current ? null : Math.max(0, now - policy.since),
      clock_skew_ms: report?.skew ?? null,
      clock_skewed: report !== null && Math.abs(report.skew) > deps.maxSkewMs,
      counters: report?.counters ?? null,
      totals: report?.totals ?? report?.counters ?? null,
      health: report?.health ?? null,
      certificate: {
        serial: row.cert_serial,
        fingerprint: row.cert_fingerprint,
        expires_at: iso(row.cert_not_after)!,
      },
    };
  };

  const changed = (row: NodeRow, from: string, to: NodeState) => {
    deps.publish?.({ id: row.id, name: row.name, state: to, previous: from });
    if (to === "offline") {
      deps.notify?.({
        level: "warning",
        kind: "node.offline",
        title: `Cluster node "${row.name}" is offline`,
        body: `No heartbeat from node ${row.name} (${row.id}) since ${
          iso(row.last_heartbeat_at)
        }; it keeps serving with its last policy if it is still running.`,
        data: { node_id: row.id, name: row.name, last_heartbeat_at: iso(row.last_heartbeat_at) },
      });
    }
  };

  /** Per certificate and reason: when the refusal was last audited and how many came since. */
  const lasting = new Map<string, { at: number; since: number }>();
  /** The detail to add when this lasting refusal is audited now; undefined: counted for later. */
  const auditDue = (key: string): { repeated?: number } | undefined => {
    const now = deps.clock.now();
    const seen = lasting.get(key);
    if (seen && now - seen.at < REPEATED_REFUSAL_AUDIT_MS) {
      seen.since++;
      return undefined;
    }
    lasting.delete(key);
    if (lasting.size >= REFUSAL_MEMORY) {
      for (const [k, v] of lasting) if (now - v.at >= REPEATED_REFUSAL_AUDIT_MS) lasting.delete(k);
      // Still full: forget the oldest (its next refusal is audited again).
      if (lasting.size >= REFUSAL_MEMORY) lasting.delete(lasting.keys().next().value!);
    }
    lasting.set(key, { at: now, since: 0 });
    return seen && seen.since > 0 ? { repeated: seen.since } : {};
  };

  const refuse = (
    ctx: Ctx,
    nodeId: string,
    reason: string,
    status: 401 | 403,
    code: string,
    message: string,
    fingerprint?: string,
  ): AppError => {
    const extra = LASTING_REFUSALS.has(reason)
      ? auditDue(`${reason}:${fingerprint ?? nodeId}`)
      : {};
    if (extra) {
      deps.transaction(() =>
        deps.audit.record({
          ...ctx,
          action: "cluster.node.authenticate",
          target: `cluster_node:${nodeId}`,
          result: "denied",
          detail: { reason, ...extra },
        })
      );
    }
    return new AppError(status, code, message);
  };

  return {
    /** The clock skew beyond which a node is shown as skewed and notified (`time.max_offset`). */
    maxSkewMs: deps.maxSkewMs,

    /** Checks a node call's certificate against the registration of `nodeId`; throws if not. */
    async authenticate(nodeId: string, peer: NodeCredential | undefined, ctx: Ctx): Promise<void> {
      if (!peer) {
        throw refuse(
          ctx,
          nodeId,
          "no_certificate",
          401,
          "NODE_CERTIFICATE_REQUIRED",
          "Node authentication required: present the node's client certificate on the cluster listener",
        );
      }
      const now = deps.clock.now();
      if (!peer.authorized || !await issuedBy(peer.der, deps.caCert, now)) {
        throw refuse(
          ctx,
          nodeId,
          "untrusted_certificate",
          401,
          "NODE_CERTIFICATE_UNTRUSTED",
          "The client certificate is not issued by this cluster's CA",
        );
      }
      const facts = await certificateFacts(peer.der);
      const row = deps.repo.node(nodeId);
      const is = (c: { cert_serial: string; cert_fingerprint: string } | undefined) =>
        c !== undefined && facts !== undefined && safeEqual(facts.serial, c.cert_serial) &&
        safeEqual(facts.fingerprint, c.cert_fingerprint);
      // The registered certificate, or the renewed one the node presents for the first time.
      const renewal = row && !is(row) ? deps.repo.renewal(nodeId) : undefined;
      const renewed = is(renewal);
      if (!row || (!is(row) && !renewed)) {
        throw refuse(
          ctx,
          nodeId,
          row ? "identity_mismatch" : "unknown_node",
          403,
          "NODE_IDENTITY_MISMATCH",
          `The client certificate is not the one registered for node "${nodeId}"`,
          facts?.fingerprint,
        );
      }
      if (row.revoked_at !== null) {
        throw refuse(
          ctx,
          nodeId,
          "revoked",
          403,
          "NODE_REVOKED",
          `Node "${nodeId}" has been revoked`,
          facts?.fingerprint,
        );
      }
      if (renewed) {
        deps.transaction(() => {
          deps.repo.promoteRenewal(renewal!);
          deps.audit.record({
            ...ctx,
            actor: { type: "system", id: nodeId, name: `node:${row.name}` },
            action: "cluster.node.certificate",
            target: `cluster_node:${nodeId}`,
            result: "success",
            detail: { serial: renewal!.cert_serial, previous_serial: row.cert_serial },
          });
        });
      }
    },

    /** Records a heartbeat of an authenticated node; returns its clock skew (ms). */
    heartbeat(
      nodeId: string,
      report: HeartbeatReport,
      ip: string,
    ): { skew_ms: number; server_time: string } {
      const now = deps.clock.now();
      const skew = report.time - now;
      const before = deps.repo.node(nodeId);
      const prev = before?.report ? JSON.parse(before.report) as StoredReport : null;
      const stored = JSON.stringify({ ...report, skew, totals: addToTotals(prev, report) });
      if (
        !before || !deps.repo.heartbeat(nodeId, { at: now, ip, report: stored, status: "online" })
      ) {
        throw new AppError(403, "NODE_REVOKED", `Node "${nodeId}" has been revoked`);
      }
      if (before.status !== "online") changed(before, before.status, "online");
      if (Math.abs(skew) > deps.maxSkewMs) {
        if (!skewed.has(nodeId)) {
          skewed.add(nodeId);
          deps.notify?.({
            level: "warning",
            kind: "time.offset",
            title: `Cluster node "${before.name}" clock is off by ${Math.round(skew)} ms`,
            body: `The clock of node ${before.name} (${nodeId}) differs from the controller's by ${
              Math.round(skew)
            } ms (limit ${deps.maxSkewMs} ms). TOTP, token expiry and heartbeats depend on it: fix the node's time synchronisation.`,
            data: { node_id: nodeId, name: before.name, skew_ms: skew },
          });
        }
      } else {
        skewed.delete(nodeId);
      }
      return { skew_ms: skew, server_time: iso(now)! };
    },

    /** Moves nodes whose heartbeats stopped to `stale` and `offline` (a timer calls it). */
    sweep(): void {
      const now = deps.clock.now();
      for (const row of deps.repo.nodes()) {
        const state = stateOf(row, now);
        if (state === row.status || row.revoked_at !== null) continue;
        deps.repo.setStatus(row.id, state);
        changed(row, row.status, state);
      }
    },

    list(): NodeView[] {
      const now = deps.clock.now();
      return deps.repo.nodes().map((r) => view(r, now));
    },

    get(id: string): NodeView {
      const row = deps.repo.node(id);
      if (!row) throw new AppError(404, "NOT_FOUND", `No cluster node "${id}"`);
      return view(row, deps.clock.now());
    },

    /** Revokes a node's certificate at once: its next call is refused. */
    revoke(id: string, ctx: Ctx): NodeView {
      const row = deps.transaction(() => {
        const row = deps.repo.node(id);
        if (!row) throw new AppError(404, "NOT_FOUND", `No cluster node "${id}"`);
        if (!deps.repo.revoke(id, deps.clock.now())) {
          throw new AppError(409, "NODE_REVOKED", `Node "${id}" is already revoked`);
        }
        deps.audit.record({
          ...ctx,
          action: "cluster.node.revoke",
          target: `cluster_node:${id}`,
          result: "success",
          detail: { name: row.name, serial: row.cert_serial },
        });
        return row;
      });
      changed(row, row.status, "revoked");
      return this.get(id);
    },

    /** Deletes a revoked node from the registry. */
    remove(id: string, ctx: Ctx): void {
      deps.transaction(() => {
        const row = deps.repo.node(id);
        if (!row) throw new AppError(404, "NOT_FOUND", `No cluster node "${id}"`);
        if (!deps.repo.removeNode(id)) {
          throw new AppError(
            409,
            "NODE_NOT_REVOKED",
            `Node "${id}" is not revoked: revoke it before removing it`,
          );
        }
        deps.audit.record({
          ...ctx,
          action: "cluster.node.delete",
          target: `cluster_node:${id}`,
          result: "success",
          detail: { name: row.name },
        });
      });
    },
  };
}

export type Registry = ReturnType<typeof createRegistry>;
