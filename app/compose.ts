/**
 * Composes a WAF process without listeners, area by area in an order that needs no late binding:
 * the store with monitoring's core, API access, the cluster role, identity, the data plane, the AI
 * assistant, monitoring and operations. `composeServer` composes every area (what `startServer`
 * serves); `composeAreas` composes the named ones and those they need, its management app mounting
 * only their routes (the in-process route tests compose the area under test).
 */
import type { PatternTester } from "../mod/protection/pattern_tester.ts";
import type { Db } from "../db/store.ts";
import { openManagementStore } from "./store.ts";
import { engineOf } from "../db/store.ts";
import { createAuditRepo } from "../db/audit_repo.ts";
import { createAudit } from "../mod/core/audit.ts";
import type { Clock } from "../mod/core/clock.ts";
import type { Config } from "../mod/config/config.ts";
import { missingProductionKeys, type ProductionProblem } from "../mod/config/production.ts";
import { parseListen } from "../mod/config/config_schema.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { Random } from "../mod/core/random.ts";
import { createReadiness, type Readiness, storeState } from "../mod/core/readiness.ts";
import { createEventLog } from "../mod/core/event_log.ts";
import { managementTls } from "../mod/tls/tls.ts";
import type { Pem } from "../mod/tls/x509.ts";
import type { Hono } from "hono";
import type { Env } from "../routes/api/env.ts";
import { healthRoutes } from "../routes/api/health.ts";
import { dataPlaneStatusRoutes } from "../routes/api/data_plane_status.ts";
import { createManagementApp } from "../routes/api/management.ts";
import type { RouteDef } from "../routes/api/route.ts";
import { type ApiAccess, createApiAccess } from "./api_access.ts";
import { type AiPlane, createAiPlane } from "./ai.ts";
import { createIdentity, type Identity } from "./identity.ts";
import { createDataPlane, type DataPlane } from "./data_plane.ts";
import {
  createMonitorCore,
  createMonitorPlane,
  type MonitorCore,
  type MonitorPlane,
} from "./monitor.ts";
import { type ClusterPlane, createCluster } from "./cluster.ts";
import { createOps, type OpsPlane } from "./ops.ts";
import { createDataWorkerPool, type DataWorkerPool, dataWorkersFor } from "./data_workers.ts";
import { changesTasks, type Coordinator, debounceRetrying } from "../mod/deployment/coordinator.ts";
import { createStoreFacts, databaseLocation } from "../mod/deployment/store_facts.ts";
import { openCoordinator } from "../mod/deployment/open.ts";
import { relayRealtime } from "../mod/deployment/realtime_relay.ts";
import { probeProductionStore } from "../mod/deployment/probe.ts";
import { resolveDeploymentKeys } from "../mod/deployment/keys.ts";
import { controllersRoutes } from "../routes/api/controllers.ts";
import { systemStorageRoutes } from "../routes/api/system_storage.ts";

/** How long remote change notices are gathered into one policy rebuild. */
const REMOTE_CHANGE_DEBOUNCE_MS = 100;
/** How soon a remote change's rebuild that failed is tried again. */
const REMOTE_REBUILD_RETRY_MS = 1_000;

export class ProductionStorageUnavailableError extends Error {
  constructor(readonly problems: readonly ProductionProblem[]) {
    super(
      `ErrProductionStorageUnavailable: storage.profile is "production" but ${
        problems.map((p) => `${p.path}: ${p.message}`).join("; ")
      }; refusing to start (no listener opened, no file written)`,
    );
    this.name = "ErrProductionStorageUnavailable";
  }
}

/**
 * Fails closed for the production profile (specification 1.8): a missing key, or a database
 * that does not answer the probe, stops start-up before anything is written.
 */
export async function checkStorageProfile(config: Config): Promise<void> {
  const problems = missingProductionKeys(config);
  if (problems.length === 0) {
    const unreachable = await probeProductionStore(config);
    if (unreachable) problems.push(unreachable);
  }
  if (problems.length > 0) throw new ProductionStorageUnavailableError(problems);
}

export interface ComposeDeps {
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly env: {
    readonly setupToken?: string;
    /** A node's one-time join token (`--join-token`, `WAF_CLUSTER_JOIN_TOKEN`); never logged. */
    readonly clusterJoinToken?: string;
  };
  /** Waits `ms` (answering a flooding client late); tests replace it. Default: a timer. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Replaces the regex tester (tests give it a slow worker and a short time limit). */
  readonly patternTester?: PatternTester;
  /** acme-client's first retry delay for a request that got no answer (default 2 s). */
  readonly acmeRetryDelayMs?: number;
}

export interface ServerOptions {
  readonly config: Config;
  readonly dataDir: string;
}

/** Observability as the process exposes it (tests reach its parts). */
export type Monitoring = MonitorPlane & MonitorCore;

/**
 * The areas of a composition, in the order they are composed. Identity, whose guard every
 * management route passes, is composed in every composition.
 */
export const AREAS = [
  "apiAccess",
  "cluster",
  "identity",
  "dataPlane",
  "ai",
  "monitor",
  "ops",
] as const;
export type Area = (typeof AREAS)[number];

/** The areas each one reads, composed with it. */
interface Needs {
  readonly apiAccess: never;
  readonly cluster: never;
  readonly identity: never;
  readonly dataPlane: never;
  readonly ai: "dataPlane";
  readonly monitor: "dataPlane";
  readonly ops: "apiAccess" | "dataPlane" | "monitor";
}
const NEEDS: { readonly [A in Area]: readonly Needs[A][] } = {
  apiAccess: [],
  cluster: [],
  identity: [],
  dataPlane: [],
  ai: ["dataPlane"],
  monitor: ["dataPlane"],
  ops: ["apiAccess", "dataPlane", "monitor"],
};

/** Each area's product, under the area's name. */
export interface AreaParts {
  /** API tokens and their cleanup worker, notifications, two-factor authentication. */
  readonly apiAccess: ApiAccess;
  /** The cluster role: controller (CA, tokens, nodes) or node (identity, agent). */
  readonly cluster: ClusterPlane;
  /** Identity and access services (setup, users, sessions, login, audit). */
  readonly identity: Identity;
  /** Sites, policy, access log and proxy of the data plane. */
  readonly dataPlane: DataPlane;
  /** The AI assistant: configuration, conversations, approvals. */
  readonly ai: AiPlane;
  /** Metrics, rollups, realtime bus, notification channels, time synchronisation. */
  readonly monitor: Monitoring;
  /** The task scheduler and its maintenance routines. */
  readonly ops: OpsPlane;
}

/** What every composition holds, whatever its areas. */
export interface ComposedBase {
  readonly db: Db;
  /** The deployment's coordination: change feed, task leases, controllers registry. */
  readonly coordinator: Coordinator;
  readonly readiness: Readiness;
  readonly identity: Identity;
  /** The data-plane workers (not started yet), when `server.data.workers` is more than 1. */
  readonly dataWorkers: DataWorkerPool | undefined;
  /** Every management route mounted. */
  readonly routes: readonly RouteDef[];
  /** The management Hono app (tests call it in-process with `app.request`). */
  readonly app: Hono<Env>;
  /** The management listener's TLS material, when TLS is on. */
  readonly tls: Pem | undefined;
  /** Starts the background work: setup token, monitoring pipelines, the task scheduler. */
  start(baseUrl: string): Promise<void>;
  /** Closes the data plane, stops the services and closes the store. */
  close(): Promise<void>;
}

/** A composition of the areas `A` and of those they need. */
export type Composed<A extends Area> = ComposedBase & Pick<AreaParts, A | Needs[A]>;

/** A composed process without listeners: what `startServer` serves. */
export type ComposedServer = Composed<Area>;

/** What the areas share: the store, the one audit trail, monitoring's core, readiness. */
type Base = Awaited<ReturnType<typeof openBase>>;

/** The areas composed so far; each step reads the earlier ones. */
interface Parts {
  dataWorkers?: DataWorkerPool;
  apiAccess?: ApiAccess;
  cluster?: ClusterPlane;
  identity?: Identity;
  tls?: Pem;
  dataPlane?: DataPlane;
  ai?: AiPlane;
  plane?: MonitorPlane;
  ops?: OpsPlane;
}

/** Builds the store, services and both planes' handlers; opens no listener. */
export function composeServer(
  options: ServerOptions,
  deps: ComposeDeps,
): Promise<ComposedServer> {
  return composeAreas({ ...options, areas: AREAS }, deps);
}

/** Composes identity, `areas` and the areas they need, in the order of `AREAS`. */
export async function composeAreas<A extends Area>(
  options: ServerOptions & { readonly areas: readonly A[] },
  deps: ComposeDeps,
): Promise<Composed<A>> {
  const chosen = withNeeds(options.areas);
  const base = await openBase(options, deps, chosen.has("dataPlane"));
  const parts: Parts = {};
  if (chosen.has("dataPlane") && base.workerCount > 1) {
    parts.dataWorkers = createDataWorkerPool({
      ...base.services,
      count: base.workerCount,
      timeOffsetMs: () => base.core.timeClock.offsetMs,
    });
  }
  if (chosen.has("apiAccess")) parts.apiAccess = composeApiAccess(base);
  try {
    await composeParts(base, parts, chosen);
  } catch (err) {
    // A data plane already made holds threads (the access-log writer, the IP list's fold
    // thread), which would keep a process that failed to start from exiting.
    await parts.dataPlane?.close().catch(() => {});
    base.services.db.close();
    if (base.services.logDb !== base.services.db) base.services.logDb.close();
    throw err;
  }
  return finish(base, parts) as Composed<A>;
}

/** `areas`, identity and every area they need. */
function withNeeds(areas: readonly Area[]): ReadonlySet<Area> {
  const chosen = new Set<Area>(["identity"]);
  const add = (area: Area) => {
    if (chosen.has(area)) return;
    chosen.add(area);
    for (const need of NEEDS[area]) add(need);
  };
  for (const area of areas) add(area);
  return chosen;
}

/** The store, the audit trail and monitoring's core (every area publishes into it). */
async function openBase(options: ServerOptions, deps: ComposeDeps, dataPlane: boolean) {
  const { config, dataDir } = options;
  await checkStorageProfile(config);
  // Before anything is opened: without --unstable-net an explicit worker count stops start-up.
  const workerCount = dataPlane
    ? dataWorkersFor(config.server.data.workers, navigator.hardwareConcurrency, deps.logger)
    : 1;
  const readiness = createReadiness();
  const events = createEventLog({ logger: deps.logger, clock: deps.clock });

  await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const controllerId = crypto.randomUUID();
  const { db, logDb, logPath } = openManagementStore(config, dataDir, {
    now: deps.clock.now(),
    controllerId,
  });
  const closeStores = () => {
    db.close();
    if (logDb !== db) logDb.close();
  };
  // The sealing and signing keys every area uses, checked against the deployment's record.
  const keys = await resolveDeploymentKeys({
    config,
    dataDir,
    db,
    random: deps.random,
    now: deps.clock.now(),
  }).catch((err) => {
    closeStores();
    throw err;
  });
  readiness.store = true;
  if (engineOf(db) === "postgresql") {
    readiness.storeAvailable = () => !(db as unknown as { unavailable: boolean }).unavailable;
  }
  // One audit trail for the whole process, injected into every area that records.
  const audit = createAudit({ repo: createAuditRepo(db), clock: deps.clock });
  const services = {
    db,
    logDb,
    logPath,
    audit,
    config,
    dataDir,
    keys,
    clock: deps.clock,
    random: deps.random,
    logger: deps.logger,
  };
  const core = createMonitorCore(services);
  const coordinator = openCoordinator({ db, config, clock: deps.clock, logger: deps.logger });
  const storeFacts = createStoreFacts({
    db,
    profile: config.storage.profile,
    location: databaseLocation(config, dataDir),
    coordinator,
    state: () => storeState(readiness),
  });
  // `workerCount`: the data-plane threads `server.data.workers` asks for (1: the main thread).
  return {
    config,
    deps,
    services,
    readiness,
    events,
    core,
    workerCount,
    coordinator,
    storeFacts,
  };
}

/** The areas after API access, in order; a failure leaves the caller to close what was made. */
async function composeParts(base: Base, parts: Parts, chosen: ReadonlySet<Area>): Promise<void> {
  const { config, deps, services, core } = base;
  if (chosen.has("cluster")) parts.cluster = await composeCluster(base);
  parts.identity = await composeIdentity(base, parts);
  const mgmtAddr = parseListen(config.server.management.listen)!;
  parts.tls = await managementTls({
    config,
    dataDir: services.dataDir,
    listenHost: mgmtAddr.hostname,
    now: deps.clock.now(),
    random: deps.random,
  });
  if (!chosen.has("dataPlane")) return;
  const dataPlane = parts.dataPlane = composeDataPlane(base, parts);
  await dataPlane.apisec.ready;
  if (chosen.has("ai")) {
    parts.ai = createAiPlane({
      ...services,
      dataPlane,
      publish: (payload) => core.bus.publish("ai.approval", payload),
      notify: core.notify,
    });
  }
  if (chosen.has("monitor")) {
    const plane = parts.plane = createMonitorPlane(core, dataPlane, {
      ...services,
      lease: base.coordinator.profile === "production"
        ? (routine) => base.coordinator.acquire(`monitor.${routine}`)
        : undefined,
    });
    if (parts.cluster) plane.metrics.register(parts.cluster.collector);
    const workers = parts.dataWorkers;
    if (workers) plane.metrics.register((out) => workers.collect(out));
  }
  if (chosen.has("ops")) {
    parts.ops = createOps({
      ...services,
      core,
      plane: parts.plane!,
      dataPlane,
      identity: parts.identity,
      apiAccess: parts.apiAccess!,
      lease: (task) => base.coordinator.acquire(`ops.${task}`),
      shared: base.coordinator.profile === "production"
        ? {
          controllerId: base.coordinator.controllerId,
          controllers: () => base.coordinator.controllers(),
        }
        : undefined,
      storeFacts: base.storeFacts,
      acmeRetryDelayMs: base.deps.acmeRetryDelayMs,
    });
  }
}

function composeApiAccess(base: Base): ApiAccess {
  return createApiAccess({
    ...base.services,
    notifications: base.core.notifications,
    timeClock: base.core.timeClock,
  });
}

async function composeCluster(base: Base): Promise<ClusterPlane> {
  const { core, readiness } = base;
  return await createCluster({
    ...base.services,
    // Heartbeats and node states on the synchronised clock (`time.apply_offset`).
    clock: core.timeClock,
    joinToken: base.deps.env.clusterJoinToken,
    notify: core.notify,
    publish: (payload) => core.bus.publish("node.status", payload),
    counters: core.counters,
    ready: () => ({
      store: readiness.store,
      data_plane: readiness.dataPlane,
      management: readiness.management,
    }),
  });
}

async function composeIdentity(base: Base, parts: Parts): Promise<Identity> {
  const { apiAccess, cluster } = parts;
  return await createIdentity({
    ...base.services,
    env: base.deps.env,
    events: base.events,
    sleep: base.deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    bearer: apiAccess?.bearer,
    verifyTotp: apiAccess?.verifyTotp,
    verifyRecoveryCode: apiAccess?.verifyRecoveryCode,
    node: cluster && ((c) => cluster.authenticate(c)),
    notify: base.core.notify,
  });
}

function composeDataPlane(base: Base, parts: Parts): DataPlane {
  const { core, services } = base;
  const { cluster } = parts;
  return createDataPlane({
    ...services,
    dbPath: services.logPath,
    controllerId: base.coordinator.controllerId,
    events: base.events,
    counters: core.counters,
    upstreamHealth: core.upstreamHealth.hook,
    observe: core.bus.access,
    timeOffsetMs: () => core.timeClock.offsetMs,
    notifications: core.notifications,
    managementClients: core.managementClients,
    patternTester: base.deps.patternTester,
    workers: parts.dataWorkers,
    connections: core.connections,
    swapped: () => {
      core.swaps++;
      cluster?.policyChanged();
    },
  });
}

/** The routes of the composed areas, in the full composition's order (mounting order matters). */
function managementRoutes(base: Base, parts: Parts): RouteDef[] {
  const { config, readiness, workerCount } = base;
  const { cluster, dataPlane, dataWorkers, identity, apiAccess, ai, plane, ops } = parts;
  const routes: RouteDef[] = [];
  if (cluster) routes.push(...healthRoutes(readiness, () => cluster.health()));
  if (dataPlane) {
    routes.push(...dataPlaneStatusRoutes(() => ({
      setting: config.server.data.workers,
      workers: workerCount,
      cores: navigator.hardwareConcurrency,
      policy_version: dataPlane.policy.current.version,
      current: dataWorkers?.current() ?? true,
      threads: dataWorkers?.status() ?? [],
    })));
    // Site routes are part of the policy: a cluster node refuses their writes.
    const siteRoutes = [...dataPlane.routes, ...(ops?.siteRoutes ?? [])];
    routes.push(...(cluster ? cluster.localWrites(siteRoutes) : siteRoutes));
  }
  routes.push(...identity!.routes);
  if (apiAccess) routes.push(...apiAccess.routes);
  if (ai) routes.push(...ai.routes);
  if (plane) routes.push(...base.core.routes, ...plane.monitorRoutes, ...plane.systemRoutes);
  if (cluster) routes.push(...cluster.routes);
  if (ops) routes.push(...ops.routes);
  routes.push(...controllersRoutes(base.coordinator), ...systemStorageRoutes(base.storeFacts));
  return routes;
}

/**
 * Tables no data-plane policy is compiled from: a remote commit that wrote only these does not
 * rebuild the policy (a console user's session, an audit record, a node's heartbeat). Any other
 * table, and any table added later, does.
 */
export const NOT_POLICY_TABLES: ReadonlySet<string> = new Set([
  "access_log_cursors",
  "access_logs",
  "admin_sessions",
  "ai_approvals",
  "ai_conversations",
  "ai_messages",
  "ai_usage",
  "api_tokens",
  "audit_log",
  "cluster_join_tokens",
  "cluster_node_renewals",
  "cluster_nodes",
  "monitor_rollups",
  "notification_attempts",
  "notification_channels",
  "notification_deliveries",
  "notification_reads",
  "notifications",
  "ops_task_runs",
  "ops_tasks",
  "username_repairs",
  "users",
]);

/** The composition's management app, start and close over the areas composed. */
function finish(base: Base, parts: Parts): ComposedBase & Partial<AreaParts> {
  const { config, deps, readiness, core, coordinator } = base;
  const { db } = base.services;
  // Another controller's commit: the data plane recompiles from the shared store, at once and
  // then at most once per burst, unless the commit wrote only tables no policy is compiled from
  // (sessions, audit, heartbeats). A failed rebuild (the store still coming back after an
  // outage, when the feed says "anything changed") is tried again.
  const rebuild = debounceRetrying(
    () => void dataPlane?.policy.rebuild(),
    REMOTE_CHANGE_DEBOUNCE_MS,
    REMOTE_REBUILD_RETRY_MS,
    (err) =>
      deps.logger.warn("policy rebuild after a remote change failed; retrying", {
        error: err instanceof Error ? err.message : String(err),
      }),
  );
  const remoteRebuild = Object.assign((tables: readonly string[] | null) => {
    if (tables === null || !tables.every((t) => NOT_POLICY_TABLES.has(t))) rebuild();
  }, { cancel: () => rebuild.cancel() });
  const { dataWorkers, apiAccess, cluster, tls, dataPlane, ai, plane, ops } = parts;
  const identity = parts.identity!;
  const routes = managementRoutes(base, parts);
  const app = createManagementApp({
    logger: deps.logger,
    random: deps.random,
    routes,
    guard: identity.guard,
    observe: core.observe,
    write: dataPlane && ((handle) => dataPlane.policy.coalesce(handle)),
  });
  return {
    db,
    coordinator,
    readiness,
    dataPlane,
    dataWorkers,
    identity,
    apiAccess,
    ai,
    monitor: plane && Object.assign(core, plane),
    cluster,
    ops,
    routes,
    app,
    tls,
    async start(baseUrl) {
      await identity.start(config.server.management.base_url ?? baseUrl);
      coordinator.onChange(remoteRebuild);
      // A schedule changed on another controller: this one's timer is armed for it too.
      coordinator.onChange((tables) => {
        if (changesTasks(tables)) ops?.scheduler.rescheduled();
      });
      // An ACME order on another controller: its HTTP-01 answers are served here too.
      coordinator.onChange((tables) => {
        if (tables !== null && !tables.includes("settings")) return;
        try {
          dataPlane?.acmeChallenges.refresh();
        } catch (err) {
          deps.logger.warn("ACME challenges could not be read from the store", {
            error: err as Error,
          });
        }
      });
      // Several controllers: a console on any of them sees the deployment's events, once each.
      if (coordinator.profile === "production") relayRealtime(core.bus, coordinator);
      await coordinator.start({
        name: Deno.hostname(),
        managementAddress: config.server.management.base_url ?? baseUrl,
      });
      plane?.start();
      cluster?.start({
        rebuild: () => void dataPlane?.policy.rebuild(),
        lease: (task) => coordinator.acquire(`cluster.${task}`),
      });
      ops?.start();
    },
    async close() {
      // Workers still busy after the shutdown deadline end here, before the store closes.
      dataWorkers?.terminate();
      await ops?.stop();
      await cluster?.stop();
      remoteRebuild.cancel();
      await coordinator.stop().catch((err) =>
        deps.logger.warn("deployment coordinator stop failed", { error: err as Error })
      );
      await plane?.stop();
      await dataPlane?.close();
      identity.stop();
      db.close();
      if (base.services.logDb !== db) base.services.logDb.close();
    },
  };
}
