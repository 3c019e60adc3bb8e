/**
 * The controller's node registry: authenticates each node call by its client certificate
 * (`node_auth.ts`), records heartbeats, derives each node's state from the time of its last
 * heartbeat (`node_view.ts`), and revokes or removes nodes. A state change is published on the
 * realtime bus (`node.status`); a node going offline, and a node whose clock is off, raise
 * notifications.
 */
import type { ClusterRepo, NodeRow } from "../../db/cluster_repo.ts";
import type { Audit } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Notify } from "../core/notifications.ts";
import type { Collector } from "../monitor/exposition.ts";
import { type NodeAuditContext, NodeAuthenticator, type NodeCredential } from "./node_auth.ts";
import {
  addToTotals,
  type HeartbeatReport,
  isoTime as iso,
  NODE_STATES,
  type NodeState,
  nodeState,
  type NodeView,
  nodeView,
  storedReport,
  type ViewBasis,
} from "./node_view.ts";

type Ctx = NodeAuditContext;

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

/** The controller's registry of cluster nodes (what `createRegistry` returns). */
export interface Registry {
  /** The clock skew beyond which a node is shown as skewed and notified (`time.max_offset`). */
  readonly maxSkewMs: number;
  /** Checks a node call's certificate against the registration of `nodeId`; throws if not. */
  authenticate(nodeId: string, peer: NodeCredential | undefined, ctx: Ctx): Promise<void>;
  /** Records a heartbeat of an authenticated node; returns its clock skew (ms). */
  heartbeat(
    nodeId: string,
    report: HeartbeatReport,
    ip: string,
  ): { skew_ms: number; server_time: string };
  /** Moves nodes whose heartbeats stopped to `stale` and `offline` (a timer calls it). */
  sweep(): void;
  /** Every node, as the API shows it. */
  list(): NodeView[];
  /** One node; 404 `NOT_FOUND` when there is none with this id. */
  get(id: string): NodeView;
  /** Revokes a node's certificate at once: its next call is refused. */
  revoke(id: string, ctx: Ctx): NodeView;
  /** Deletes a revoked node from the registry. */
  remove(id: string, ctx: Ctx): void;
}

class NodeRegistry implements Registry {
  readonly maxSkewMs: number;
  readonly #deps: RegistryDeps;
  readonly #auth: NodeAuthenticator;
  readonly #basis: ViewBasis;
  /** Nodes whose clock skew has been notified (until it is back within the limit). */
  readonly #skewed = new Set<string>();

  constructor(deps: RegistryDeps) {
    this.#deps = deps;
    this.maxSkewMs = deps.maxSkewMs;
    this.#auth = new NodeAuthenticator(deps);
    this.#basis = {
      offlineAfterMs: deps.offlineAfterMs,
      maxSkewMs: deps.maxSkewMs,
      policy: deps.policy,
    };
  }

  authenticate(nodeId: string, peer: NodeCredential | undefined, ctx: Ctx): Promise<void> {
    return this.#auth.authenticate(nodeId, peer, ctx);
  }

  heartbeat(
    nodeId: string,
    report: HeartbeatReport,
    ip: string,
  ): { skew_ms: number; server_time: string } {
    const deps = this.#deps;
    const now = deps.clock.now();
    const skew = report.time - now;
    const before = deps.repo.node(nodeId);
    const prev = before ? storedReport(before) : null;
    const stored = JSON.stringify({ ...report, skew, totals: addToTotals(prev, report) });
    if (
      !before || !deps.repo.heartbeat(nodeId, { at: now, ip, report: stored, status: "online" })
    ) {
      throw new AppError(403, "NODE_REVOKED", `Node "${nodeId}" has been revoked`);
    }
    if (before.status !== "online") this.#changed(before, before.status, "online");
    this.#checkSkew(before, skew);
    return { skew_ms: skew, server_time: iso(now)! };
  }

  sweep(): void {
    const deps = this.#deps;
    const now = deps.clock.now();
    for (const row of deps.repo.nodes()) {
      const state = nodeState(row, now, deps.offlineAfterMs);
      if (state === row.status || row.revoked_at !== null) continue;
      deps.repo.setStatus(row.id, state);
      this.#changed(row, row.status, state);
    }
  }

  list(): NodeView[] {
    const now = this.#deps.clock.now();
    return this.#deps.repo.nodes().map((r) => nodeView(r, now, this.#basis));
  }

  get(id: string): NodeView {
    const row = this.#deps.repo.node(id);
    if (!row) throw new AppError(404, "NOT_FOUND", `No cluster node "${id}"`);
    return nodeView(row, this.#deps.clock.now(), this.#basis);
  }

  revoke(id: string, ctx: Ctx): NodeView {
    const deps = this.#deps;
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
    this.#changed(row, row.status, "revoked");
    return this.get(id);
  }

  remove(id: string, ctx: Ctx): void {
    const deps = this.#deps;
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
  }

  /** Publishes a state change; a node going offline is also notified. */
  #changed(row: NodeRow, from: string, to: NodeState): void {
    const deps = this.#deps;
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
        link: "/console/cluster",
      });
    }
  }

  /** Notifies a clock skew beyond the limit once, until the node's clock is back within it. */
  #checkSkew(row: NodeRow, skew: number): void {
    const deps = this.#deps;
    if (Math.abs(skew) > deps.maxSkewMs) {
      if (!this.#skewed.has(row.id)) {
        this.#skewed.add(row.id);
        deps.notify?.({
          level: "warning",
          kind: "time.offset",
          title: `Cluster node "${row.name}" clock is off by ${Math.round(skew)} ms`,
          body: `The clock of node ${row.name} (${row.id}) differs from the controller's by ${
            Math.round(skew)
          } ms (limit ${deps.maxSkewMs} ms). TOTP, token expiry and heartbeats depend on it: fix the node's time synchronisation.`,
          data: { node_id: row.id, name: row.name, skew_ms: skew },
          params: {
            variant: "node",
            node_id: row.id,
            name: row.name,
            skew_ms: Math.round(skew),
            max_skew_ms: deps.maxSkewMs,
          },
          link: "/console/cluster",
        });
      }
    } else {
      this.#skewed.delete(row.id);
    }
  }
}

/** The controller's node registry over `deps.repo`. */
export function createRegistry(deps: RegistryDeps): Registry {
  return new NodeRegistry(deps);
}
