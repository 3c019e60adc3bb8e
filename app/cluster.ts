/**
 * Composes the cluster role of a process (docs/cluster.md). A controller shares the cluster CA,
 * the join tokens and the node registry with the other controllers of its store (one
 * deployment), and opens the mTLS cluster listener when `cluster.listen` is set. A node joins
 * its controller with a one-time token (once; its identity stays in its data directory).
 */
import { createClusterRepo } from "../db/cluster_repo.ts";
import type { Db } from "../db/store.ts";
import { transaction } from "../db/store.ts";
import { type ClusterCa, loadClusterCa } from "../mod/cluster/cluster_ca.ts";
import { createEnrollment } from "../mod/cluster/enrollment.ts";
import { createJoinTokens } from "../mod/cluster/join_tokens.ts";
import { NodeAgent } from "../mod/cluster/node_agent.ts";
import { createRegistry, type Registry, registryCollector } from "../mod/cluster/registry.ts";
import type { Collector } from "../mod/monitor/exposition.ts";
import { createPolicyFollower, createPolicySource } from "../mod/cluster/policy_sync.ts";
import { PolicyWatch } from "../mod/cluster/policy_watch.ts";
import { createClusterPolicyRepo } from "../db/cluster_policy_repo.ts";
import { createSettingsRepo } from "../db/settings_repo.ts";
import { durationMs } from "../mod/core/duration.ts";
import type { Notify } from "../mod/core/notifications.ts";
import type { SiteCounterSet } from "../mod/data_plane/site_counters.ts";
import type { Ctx } from "../routes/api/env.ts";
import { auditContext } from "../routes/api/actor.ts";
import {
  joinCluster,
  loadNodeIdentity,
  type NodeIdentity,
  nodeJoinProblem,
  saveRenewedCertificate,
} from "../mod/cluster/node_identity.ts";
import { type Config, ConfigProblemError } from "../mod/config/config.ts";
import { parseListen } from "../mod/config/config_schema.ts";
import type { Audit } from "../mod/core/audit.ts";
import type { Clock } from "../mod/core/clock.ts";
import { AppError } from "../mod/core/errors.ts";
import type { Logger } from "../mod/core/logger.ts";
import { deploymentApisecWire } from "../mod/apisec/apisec_wire.ts";
import { deploymentSiteKeys, openedPolicyRepo } from "../mod/data_plane/site_keys.ts";
import type { Random } from "../mod/core/random.ts";
import { clusterRoutes } from "../routes/api/cluster.ts";
import type { Env } from "../routes/api/env.ts";
import type { RouteDef } from "../routes/api/route.ts";
import type { Listener } from "../net/listen.ts";
import { listenMtls } from "../net/mtls_listen.ts";
import type { Hono } from "hono";
import type { DeploymentKeys } from "../mod/core/deployment_keys.ts";
import { createSecretBox } from "../mod/core/secret_box.ts";

/** Paths the cluster listener serves; everything else there is 404. */
const CLUSTER_PATHS =
  /^\/api\/cluster\/(?:ca|join|nodes\/[0-9a-f]{16}\/(?:heartbeat|policy|policy\/watch|certificate))$/;
const JOIN_RETRY_MS = 3000;

export interface ClusterDeps {
  readonly db: Db;
  readonly audit: Audit;
  readonly config: Config;
  readonly dataDir: string;
  /** The deployment's sealing and signing keys, resolved once at start-up. */
  readonly keys: DeploymentKeys;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  /** The join token from `--join-token` or `WAF_CLUSTER_JOIN_TOKEN` (wins over the file). */
  readonly joinToken?: string;
  /** Raises administrator notifications (`node.offline`, a node's clock skew). */
  readonly notify?: Notify;
  /** Publishes `node.status` on the realtime bus. */
  readonly publish?: (payload: Readonly<Record<string, unknown>>) => void;
  /** The data plane's per-site counters (a node reports their totals). */
  readonly counters: SiteCounterSet;
  /** The process's readiness facts (a node reports them). */
  readonly ready: () => Readonly<Record<string, unknown>>;
}

/** How often the controller moves silent nodes to stale and offline. */
const SWEEP_EVERY_MS = 1000;

export interface ClusterPlane {
  readonly role: "controller" | "node";
  readonly routes: readonly RouteDef[];
  /** The controller's CA (undefined on a node). */
  readonly ca: ClusterCa | undefined;
  /** The node's identity once joined (undefined on a controller or before joining). */
  identity(): NodeIdentity | undefined;
  /** The guard's node authentication (the client certificate of a node call). */
  authenticate(c: Ctx): Promise<boolean>;
  /** The node's heartbeat agent, once joined (tests call `beat()`). */
  agent(): NodeAgent | undefined;
  /** The controller's stale/offline pass (a timer runs it every second). */
  sweep(): void;
  /** Told after every policy swap (the controller's policy version follows it). */
  policyChanged(): void;
  /** On a node, the data-plane routes with their changes refused (409 `CLUSTER_NODE_READ_ONLY`). */
  localWrites(routes: readonly RouteDef[]): readonly RouteDef[];
  /** The Prometheus metrics of the cluster role (nodes on a controller, the link on a node). */
  readonly collector: Collector;
  /** What `/health/cluster` shows (no secrets). */
  health(): { readonly healthy: boolean; readonly body: Record<string, unknown> };
  /** Opens the cluster listener (a controller with `cluster.listen`), serving `app`. */
  listen(app: Hono<Env>): Promise<Listener | undefined>;
  /**
   * Starts the controller's sweep, or the node's join (in the background until it succeeds or is
   * refused) and heartbeats; `rebuild` recompiles the data plane's policy from the store.
   */
  /**
   * `lease`: the deployment-wide lease of a timed routine (several controllers on one store:
   * the node sweep, whose state changes notify, runs on the holder only).
   */
  start(data: {
    readonly rebuild: () => void;
    readonly lease?: (task: string) => Promise<boolean>;
  }): void;
  stop(): Promise<void>;
}

export async function createCluster(deps: ClusterDeps): Promise<ClusterPlane> {
  const { config } = deps;
  return config.cluster.role === "node" ? await createNodeRole(deps) : await createController(deps);
}

async function createController(deps: ClusterDeps): Promise<ClusterPlane> {
  const c = deps.config.cluster;
  const listenAddr = c.listen ? parseListen(c.listen) : undefined;
  const names = new Set(["localhost", "127.0.0.1", "::1", ...c.server_names]);
  if (listenAddr && listenAddr.hostname !== "0.0.0.0" && listenAddr.hostname !== "::") {
    names.add(listenAddr.hostname);
  }
  const tx = <T>(fn: () => T): T => transaction(deps.db, fn);
  const ca = await loadClusterCa(
    {
      settings: createSettingsRepo(deps.db),
      transaction: tx,
      box: createSecretBox(deps.keys.sealing, deps.random),
      dataDir: deps.dataDir,
      random: deps.random,
    },
    [...names],
    deps.clock.now(),
  );
  logCaOrigin(deps, ca);
  const repo = createClusterRepo(deps.db);
  const base = { repo, audit: deps.audit, clock: deps.clock, random: deps.random, transaction: tx };
  const tokens = createJoinTokens({ ...base, caFingerprint: ca.fingerprint });
  const enrollment = createEnrollment({
    ...base,
    ca,
    enrolled: (id, name) => deps.publish?.({ id, name, state: "enrolled", previous: null }),
  });
  const registry = createRegistry({
    ...base,
    caCert: ca.ca.cert,
    offlineAfterMs: durationMs(c.offline_after),
    policy: () => source.current(),
    maxSkewMs: durationMs(deps.config.time.max_offset),
    notify: deps.notify,
    publish: deps.publish,
  });
  const source = createPolicySource({ repo: policyRows(deps), clock: deps.clock });
  const watch = new PolicyWatch({ current: () => source.current().version, logger: deps.logger });
  let sweeper: ReturnType<typeof setInterval> | undefined;
  const routes = clusterRoutes({
    policy: source,
    watch,
    audit: deps.audit,
    transaction: tx,
    tokens,
    enrollment,
    registry,
    caCertificate: ca.ca.cert,
    caFingerprint: ca.fingerprint,
  });
  return {
    role: "controller",
    routes,
    ca,
    identity: () => undefined,
    agent: () => undefined,
    async authenticate(c) {
      await registry.authenticate(c.req.param("id") ?? "", c.env?.peer, auditContext(c));
      return true;
    },
    sweep: () => registry.sweep(),
    policyChanged() {
      source.changed();
      watch.changed();
    },
    collector: registryCollector(() => registry.list()),
    localWrites: (r) => r,
    health: () => controllerHealth(registry.list()),
    async listen(app) {
      const listener = await listenCluster(listenAddr, ca, app);
      if (!listener) return undefined;
      // Waiting watches are answered before the listener drains, so its shutdown does not wait.
      const shutdown = () => {
        watch.close();
        return listener.shutdown();
      };
      return { ...listener, shutdown };
    },
    start(data) {
      const sweep = () => {
        try {
          registry.sweep();
        } catch (err) {
          deps.logger.error("cluster node sweep failed", { error: err as Error });
        }
      };
      sweeper = setInterval(() => {
        if (!data.lease) return sweep();
        data.lease("node_sweep").then(
          (held) => held && sweep(),
          (err) => deps.logger.warn("cluster node sweep lease failed", { error: err as Error }),
        );
      }, SWEEP_EVERY_MS);
    },
    stop() {
      if (sweeper !== undefined) clearInterval(sweeper);
      watch.close();
      return Promise.resolve();
    },
  };
}

/** Says where the deployment's cluster CA came from when that is news for the operator. */
function logCaOrigin(deps: Pick<ClusterDeps, "logger" | "dataDir">, ca: ClusterCa): void {
  const fields = { fingerprint: ca.fingerprint };
  if (ca.origin === "adopted") {
    deps.logger.info("cluster CA moved from the data directory into the management store", {
      ...fields,
      file: `${deps.dataDir}/cluster/ca.key`,
    });
  } else if (ca.origin === "created") {
    deps.logger.info("cluster CA created in the management store", fields);
  }
  if (ca.staleFile) {
    deps.logger.warn(
      "the data directory holds a cluster CA that is not the deployment's: nodes enrolled with it must join again",
      { ...fields, file: `${deps.dataDir}/cluster/ca.crt` },
    );
  }
}

function refuseLocalWrite(): never {
  throw new AppError(
    409,
    "CLUSTER_NODE_READ_ONLY",
    "This waf is a cluster node: its policy comes from the controller; make the change there",
  );
}

async function createNodeRole(deps: ClusterDeps): Promise<ClusterPlane> {
  const identity = await loadNodeIdentity(deps.dataDir);
  const problem = await nodeJoinProblem(deps.config, deps.dataDir, deps.joinToken);
  if (problem) throw new ConfigProblemError([problem]);
  return new NodeRole(deps, identity);
}

/**
 * A node: its identity (joined with the one-time token once, retried in the background until it
 * succeeds or is refused) and, once joined, its heartbeat agent.
 */
class NodeRole implements ClusterPlane {
  readonly role = "node";
  readonly routes = clusterRoutes(undefined);
  readonly ca = undefined;
  readonly #deps: ClusterDeps;
  readonly #name: string;
  #identity: NodeIdentity | undefined;
  #joinProblem: string | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #agent: NodeAgent | undefined;
  #rebuild: (() => void) | undefined;

  constructor(deps: ClusterDeps, identity: NodeIdentity | undefined) {
    this.#deps = deps;
    this.#identity = identity;
    this.#name = deps.config.cluster.name ?? Deno.hostname();
  }

  identity(): NodeIdentity | undefined {
    return this.#identity;
  }

  agent(): NodeAgent | undefined {
    return this.#agent;
  }

  authenticate(): Promise<boolean> {
    return Promise.resolve(false);
  }

  sweep(): void {}

  policyChanged(): void {}

  readonly collector: Collector = (out) => {
    out.family(
      "waf_cluster_controller_connected",
      "gauge",
      "1 when this node's last heartbeat was accepted by its controller",
    );
    out.sample(
      "waf_cluster_controller_connected",
      {},
      this.#agent?.status().link === "connected" ? 1 : 0,
    );
  };

  localWrites(routes: readonly RouteDef[]): readonly RouteDef[] {
    return routes.map((r) =>
      r.access.kind === "permission" && r.access.permission.startsWith("write:")
        ? { ...r, handler: refuseLocalWrite }
        : r
    );
  }

  health() {
    const identity = this.#identity;
    const enrolled = identity !== undefined;
    const link = this.#agent?.status();
    const problem = this.#joinProblem ?? link?.last_error ?? undefined;
    return {
      healthy: enrolled,
      body: {
        mode: "node",
        status: enrolled && link?.link === "connected" ? "healthy" : "degraded",
        node_id: identity?.nodeId ?? null,
        name: this.#name,
        controller: this.#deps.config.cluster.controller_url,
        enrolled,
        ...(link ?? {}),
        ...(problem ? { problem } : {}),
      },
    };
  }

  listen(): Promise<Listener | undefined> {
    return Promise.resolve(undefined);
  }

  start(data: { readonly rebuild: () => void }): void {
    this.#rebuild = data.rebuild;
    const identity = this.#identity;
    if (identity) {
      this.#deps.logger.info("cluster node identity loaded", { node_id: identity.nodeId });
      this.#startAgent(identity);
      return;
    }
    void this.#tryJoin();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#agent?.stop();
  }

  #startAgent(id: NodeIdentity): void {
    if (this.#stopped) return;
    const deps = this.#deps;
    const tx = <T>(fn: () => T): T => transaction(deps.db, fn);
    this.#agent = new NodeAgent({
      policy: createPolicyFollower({
        nodeId: id.nodeId,
        repo: policyRows(deps),
        settings: createSettingsRepo(deps.db),
        clock: deps.clock,
        logger: deps.logger,
        transaction: tx,
        rebuild: () => this.#rebuild?.(),
      }),
      identity: id,
      clock: deps.clock,
      logger: deps.logger,
      intervalMs: durationMs(deps.config.cluster.heartbeat_interval),
      counters: () => deps.counters.all(),
      health: deps.ready,
      saveRenewal: (renewed) => saveRenewedCertificate(deps.dataDir, renewed),
    });
    this.#agent.start();
  }

  async #tryJoin(): Promise<void> {
    this.#timer = undefined;
    if (this.#stopped || this.#identity) return;
    const deps = this.#deps;
    const c = deps.config.cluster;
    try {
      const identity = await joinCluster({
        dataDir: deps.dataDir,
        controllerUrl: c.controller_url!,
        token: (deps.joinToken ?? c.join_token)!,
        name: this.#name,
      });
      this.#identity = identity;
      this.#joinProblem = undefined;
      deps.logger.info("joined the cluster", {
        node_id: identity.nodeId,
        controller: identity.controllerUrl,
      });
      this.#startAgent(identity);
    } catch (err) {
      // A refused token or a CA that does not match the pin will not improve by retrying.
      const final = err instanceof AppError && err.status < 500;
      this.#joinProblem = err instanceof AppError ? err.code : "CONTROLLER_UNREACHABLE";
      deps.logger.error(final ? "joining the cluster was refused" : "cannot reach the controller", {
        controller: c.controller_url,
        code: this.#joinProblem,
        error: err instanceof AppError ? err.message : String((err as Error)?.message ?? err),
      });
      if (!final && !this.#stopped) this.#timer = setTimeout(() => this.#tryJoin(), JOIN_RETRY_MS);
    }
  }
}

/** What `/health/cluster` shows on a controller: each node's state, counted by state. */
function controllerHealth(list: ReturnType<Registry["list"]>) {
  const nodes = list.map((n) => ({
    id: n.id,
    name: n.name,
    state: n.state,
    healthy: n.state === "online",
    last_heartbeat_at: n.last_heartbeat_at,
    policy_current: n.policy_current,
  }));
  const active = nodes.filter((n) => n.state !== "revoked");
  const degraded = active.some((n) => n.state === "stale" || n.state === "offline");
  return {
    healthy: true,
    body: {
      mode: nodes.length > 0 ? "controller" : "standalone",
      status: degraded ? "degraded" : "healthy",
      ...(nodes.length > 0
        ? {
          counts: Object.fromEntries(
            ["enrolled", "online", "stale", "offline", "revoked"].map((
              s,
            ) => [s, nodes.filter((n) => n.state === s).length]),
          ),
        }
        : {}),
      nodes: nodes.length > 0 ? nodes : [{ id: "local", healthy: true }],
    },
  };
}

/** The controller's mTLS cluster listener, serving only the cluster paths of `app`. */
async function listenCluster(
  listenAddr: { readonly hostname: string; readonly port: number } | undefined,
  ca: ClusterCa,
  app: Hono<Env>,
): Promise<Listener | undefined> {
  if (!listenAddr) return undefined;
  return await listenMtls({
    name: "cluster",
    hostname: listenAddr.hostname,
    port: listenAddr.port,
    cert: ca.server.cert,
    key: ca.server.key,
    ca: ca.ca.cert,
    maxBodyBytes: 1_048_576,
    handler: (req, info) => {
      const path = new URL(req.url).pathname;
      if (!CLUSTER_PATHS.test(path)) {
        return Response.json({
          error: { code: "NOT_FOUND", message: "Not a cluster endpoint" },
        }, { status: 404 });
      }
      return app.fetch(req, { remoteAddr: info.remoteAddr, tls: true, peer: info.peer });
    },
  });
}

/**
 * The policy rows as they travel: site keys and the API-security shared secret opened for the
 * snapshot, sealed again on a node.
 */
function policyRows(deps: Pick<ClusterDeps, "db" | "keys" | "random" | "logger">) {
  return openedPolicyRepo(
    createClusterPolicyRepo(deps.db),
    deploymentSiteKeys(deps.keys, deps.random, deps.logger),
    deploymentApisecWire(deps.keys, deps.random, deps.logger),
  );
}
