/**
 * Composes a running WAF process: store, services, the management app and the data plane on
 * two separate listeners, readiness, and graceful shutdown. Tests start it on port 0.
 */
import type { Db } from "../db/store.ts";
import { openStore } from "../db/store.ts";
import { createAuditRepo } from "../db/audit_repo.ts";
import { createAudit } from "../mod/core/audit.ts";
import type { Clock } from "../mod/core/clock.ts";
import { type Config, deploymentProblems, durationMs } from "../mod/config/config.ts";
import { parseListen } from "../mod/config/config_schema.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { Random } from "../mod/core/random.ts";
import { createReadiness, type Readiness } from "../mod/core/readiness.ts";
import { createEventLog } from "../mod/core/event_log.ts";
import { managementTls } from "../mod/tls/tls.ts";
import type { Pem } from "../mod/tls/x509.ts";
import type { Hono } from "hono";
import type { Env } from "../routes/api/env.ts";
import type { DataHandler } from "../routes/proxy/status_page.ts";
import { healthRoutes } from "../routes/api/health.ts";
import { dataPlaneStatusRoutes } from "../routes/api/data_plane_status.ts";
import {
  formatAddress,
  listen,
  type Listener,
  ListenerError,
  listenerError,
  type ListenOptions,
} from "../routes/listen.ts";
import { limitsFromConfig } from "../routes/conn_front.ts";
import { createManagementApp } from "../routes/api/management.ts";
import type { RouteDef } from "../routes/api/route.ts";
import { type ApiAccess, createApiAccess } from "./api_access.ts";
import { type AiPlane, createAiPlane } from "./ai.ts";
import { createIdentity, type Identity } from "./identity.ts";
import { createDataPlane, type DataPlane } from "./data_plane.ts";
import { createMonitorCore, createMonitorPlane, type MonitorPlane } from "./monitor.ts";
import { type ClusterPlane, createCluster } from "./cluster.ts";
import { createOps, type OpsPlane } from "./ops.ts";
import { startMallocTrimmer } from "../mod/core/malloc_trim.ts";
import { shortenThreadSlice } from "../mod/core/thread_slice.ts";
import type { PatternTester } from "../mod/protection/pattern_tester.ts";
import {
  createDataWorkerPool,
  type DataWorkerPool,
  dataWorkersFor,
  startDataWorkers,
} from "./data_workers.ts";

export class ProductionStorageUnavailableError extends Error {
  constructor(missing: string) {
    super(
      `ErrProductionStorageUnavailable: storage.profile is "production" but ${missing}; refusing to start (no listener opened, no file written)`,
    );
    this.name = "ErrProductionStorageUnavailable";
  }
}

/** Fails closed for the production profile: this build has no external store. */
export function checkStorageProfile(config: Config): void {
  if (deploymentProblems(config).some((p) => p.code === "ErrProductionStorageUnavailable")) {
    throw new ProductionStorageUnavailableError(
      "no external management database is available in this build (the production store adapter is not installed)",
    );
  }
}

export interface ServerDeps {
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
  /** Replaces the data-plane handler (tests use it to hold a request in flight). */
  readonly dataHandler?: DataHandler;
  /** Replaces the regex tester (tests give it a slow worker and a short time limit). */
  readonly patternTester?: PatternTester;
}

export interface RunningServer {
  readonly db: Db;
  readonly data: Listener;
  readonly management: Listener;
  readonly readiness: Readiness;
  /** Base URL of the management listener, e.g. `http://127.0.0.1:9443`. */
  readonly managementUrl: string;
  readonly dataUrl: string;
  /** Sites, policy, access log and proxy of the data plane. */
  readonly dataPlane: DataPlane;
  /** The data-plane workers, when `server.data.workers` is more than 1. */
  readonly dataWorkers: DataWorkerPool | undefined;
  /** `https://host:port` of the HTTPS data listener, when `server.data.https_listen` is set. */
  readonly dataHttpsUrl: string | undefined;
  /** Every management route mounted (the route-permission inventory test walks these). */
  readonly routes: readonly RouteDef[];
  /** Identity and access services (setup, users, sessions, login, audit). */
  readonly identity: Identity;
  /** API tokens and their cleanup worker, notifications, two-factor authentication. */
  readonly apiAccess: ApiAccess;
  /** The AI assistant: configuration, conversations, approvals. */
  readonly ai: AiPlane;
  /** Metrics, rollups, realtime bus, notification channels, time synchronisation. */
  readonly monitor: Monitoring;
  /** The cluster role: controller (CA, tokens, nodes) or node (identity, agent). */
  readonly cluster: ClusterPlane;
  /** `https://host:port` of the controller's cluster listener, when `cluster.listen` is set. */
  readonly clusterUrl: string | undefined;
  /** The task scheduler and its maintenance routines. */
  readonly ops: OpsPlane;
  /** Drains both listeners (bounded by the shutdown timeout) and closes the store. */
  shutdown(): Promise<void>;
}

/** Observability as the process exposes it (tests reach its parts). */
export type Monitoring = MonitorPlane & ReturnType<typeof createMonitorCore>;

export interface ServerOptions {
  readonly config: Config;
  readonly dataDir: string;
}

/** A composed process without listeners: what `startServer` serves, and what tests call. */
export interface ComposedServer {
  readonly db: Db;
  readonly readiness: Readiness;
  readonly dataPlane: DataPlane;
  /** The data-plane workers (not started yet), when `server.data.workers` is more than 1. */
  readonly dataWorkers: DataWorkerPool | undefined;
  readonly identity: Identity;
  readonly apiAccess: ApiAccess;
  /** The AI assistant: configuration, conversations, approvals. */
  readonly ai: AiPlane;
  /** Metrics, rollups, realtime bus, notification channels, time synchronisation. */
  readonly monitor: Monitoring;
  /** The cluster role: controller (CA, tokens, nodes) or node (identity, agent). */
  readonly cluster: ClusterPlane;
  /** The task scheduler and its maintenance routines. */
  readonly ops: OpsPlane;
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

/** Builds the store, services and both planes' handlers; opens no listener. */
export async function composeServer(
  options: ServerOptions,
  deps: Omit<ServerDeps, "dataHandler">,
): Promise<ComposedServer> {
  const { config, dataDir } = options;
  checkStorageProfile(config);
  // Before anything is opened: without --unstable-net an explicit worker count stops start-up.
  const workerCount = dataWorkersFor(
    config.server.data.workers,
    navigator.hardwareConcurrency,
    deps.logger,
  );
  const mgmtAddr = parseListen(config.server.management.listen)!;
  const readiness = createReadiness();
  const events = createEventLog({ logger: deps.logger, clock: deps.clock });

  await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const db = openStore(`${dataDir}/waf.db`, { now: deps.clock.now() });
  readiness.store = true;
  // One audit trail for the whole process, injected into every area that records.
  const audit = createAudit({ repo: createAuditRepo(db), clock: deps.clock });
  const services = {
    db,
    audit,
    config,
    dataDir,
    clock: deps.clock,
    random: deps.random,
    logger: deps.logger,
  };
  const core = createMonitorCore(services);
  const dataWorkers = workerCount > 1
    ? createDataWorkerPool({
      ...services,
      count: workerCount,
      timeOffsetMs: () => core.timeClock.offsetMs,
    })
    : undefined;
  const apiAccess = createApiAccess({
    ...services,
    notifications: core.notifications,
    timeClock: core.timeClock,
  });
  let identity: Identity;
  let cluster: ClusterPlane;
  let tls: Pem | undefined;
  let dataPlane: DataPlane | undefined;
  let ai: AiPlane;
  let plane: MonitorPlane;
  let ops: OpsPlane;
  try {
    cluster = await createCluster({
      ...services,
      // Heartbeats and node states on the synchronised clock (`time.apply_offset`).
      clock: core.timeClock,
      joinToken: deps.env.clusterJoinToken,
      notify: core.notify,
      publish: (payload) => core.bus.publish("node.status", payload),
      counters: core.counters,
      ready: () => ({
        store: readiness.store,
        data_plane: readiness.dataPlane,
        management: readiness.management,
      }),
    });
    identity = await createIdentity({
      ...services,
      env: deps.env,
      events,
      sleep: deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
      bearer: apiAccess.bearer,
      verifyTotp: apiAccess.verifyTotp,
      node: (c) => cluster.authenticate(c),
      notify: core.notify,
    });
    tls = await managementTls({
      config,
      dataDir,
      listenHost: mgmtAddr.hostname,
      now: deps.clock.now(),
      random: deps.random,
    });
    dataPlane = createDataPlane({
      ...services,
      dbPath: `${dataDir}/waf.db`,
      events,
      counters: core.counters,
      upstreamHealth: core.upstreamHealth.hook,
      observe: core.bus.access,
      timeOffsetMs: () => core.timeClock.offsetMs,
      workers: dataWorkers,
      connections: core.connections,
      patternTester: deps.patternTester,
      swapped: () => {
        core.swaps++;
        cluster.policyChanged();
      },
    });
    await dataPlane.apisec.ready;
    ai = createAiPlane({
      ...services,
      dataPlane,
      publish: (payload) => core.bus.publish("ai.approval", payload),
      notify: core.notify,
    });
    plane = createMonitorPlane(core, dataPlane, services);
    plane.metrics.register(cluster.collector);
    if (dataWorkers) plane.metrics.register((out) => dataWorkers.collect(out));
    ops = createOps({ ...services, core, plane, dataPlane, identity, apiAccess });
  } catch (err) {
    // A data plane already made holds threads (the access-log writer, the IP list's fold
    // thread), which would keep a process that failed to start from exiting.
    await dataPlane?.close().catch(() => {});
    db.close();
    throw err;
  }
  const monitor: Monitoring = Object.assign(core, plane);
  const routes: RouteDef[] = [
    ...healthRoutes(readiness, () => cluster.health()),
    ...dataPlaneStatusRoutes(() => ({
      setting: config.server.data.workers,
      workers: workerCount,
      cores: navigator.hardwareConcurrency,
      policy_version: dataPlane.policy.current.version,
      current: dataWorkers?.current() ?? true,
      threads: dataWorkers?.status() ?? [],
    })),
    ...cluster.localWrites([...dataPlane.routes, ...ops.siteRoutes]),
    ...identity.routes,
    ...apiAccess.routes,
    ...ai.routes,
    ...core.routes,
    ...plane.monitorRoutes,
    ...plane.systemRoutes,
    ...cluster.routes,
    ...ops.routes,
  ];
  const app = createManagementApp({
    logger: deps.logger,
    random: deps.random,
    routes,
    guard: identity.guard,
    observe: core.observe,
    write: (handle) => dataPlane.policy.coalesce(handle),
  });
  return {
    db,
    readiness,
    dataPlane,
    dataWorkers,
    identity,
    apiAccess,
    ai,
    monitor,
    cluster,
    ops,
    routes,
    app,
    tls,
    async start(baseUrl) {
      await identity.start(config.server.management.base_url ?? baseUrl);
      plane.start();
      cluster.start({ rebuild: () => void dataPlane.policy.rebuild() });
      ops.start();
    },
    async close() {
      // Workers still busy after the shutdown deadline end here, before the store closes.
      dataWorkers?.terminate();
      await ops.stop();
      await cluster.stop();
      await plane.stop();
      await dataPlane.close();
      identity.stop();
      db.close();
    },
  };
}

/** The connection front of a listener from its `limits` block; undefined when turned off. */
function connectionFront(
  limits: Config["server"]["data"]["limits"],
  composed: ComposedServer,
  name: "data" | "management",
  deps: ServerDeps,
): ListenOptions["front"] {
  if (!limits.enabled) return undefined;
  return {
    limits: limitsFromConfig(limits),
    stats: composed.monitor.connections.listener(name),
    logger: deps.logger,
    onBadFraming: name === "data" ? composed.dataPlane.badFraming : undefined,
    longLivedFeeds: name === "management",
    // The data listener's front serves HTTP/1.1 itself; the management app stays on Deno.serve.
    http1: name === "data",
  };
}

export async function startServer(
  options: ServerOptions,
  deps: ServerDeps,
): Promise<RunningServer> {
  const { config, dataDir } = options;
  const dataAddr = parseListen(config.server.data.listen)!;
  const mgmtAddr = parseListen(config.server.management.listen)!;
  const composed = await composeServer(options, deps);
  const { app, tls, readiness, dataPlane } = composed;

  const listeners: Listener[] = [];
  try {
    const management = listen({
      name: "management",
      hostname: mgmtAddr.hostname,
      port: mgmtAddr.port,
      tls,
      handler: (req, info) =>
        app.fetch(req, { remoteAddr: info.remoteAddr, tls: !!tls, longLived: info.longLived }),
      front: connectionFront(config.server.management.limits, composed, "management", deps),
    });
    listeners.push(management);
    const clusterListener = await composed.cluster.listen(app);
    if (clusterListener) listeners.push(clusterListener);
    readiness.management = true;
    const workers = composed.dataWorkers;
    let data: Listener;
    let https: { hostname: string; port: number; shutdown(): Promise<void> } | undefined;
    if (workers) {
      // The workers serve both data ports; the process is ready once all enforce the policy.
      ({ data, https } = await startDataWorkers(workers, {
        config,
        dataPlane,
        counters: composed.monitor.counters,
        upstreamHealth: composed.monitor.upstreamHealth.hook,
        connections: composed.monitor.connections.listener("data"),
      }));
      listeners.push(data);
      readiness.dataPlaneCurrent = () => workers.current();
    } else {
      data = listen({
        name: "data",
        hostname: dataAddr.hostname,
        port: dataAddr.port,
        handler: deps.dataHandler ?? dataPlane.handler,
        front: connectionFront(config.server.data.limits, composed, "data", deps),
      });
      listeners.push(data);
      https = await dataPlane.startHttps().catch((err) => {
        throw err instanceof ListenerError
          ? err
          : listenerError("data HTTPS", config.server.data.https_listen ?? "", err);
      });
    }
    readiness.dataPlane = true;

    const managementUrl = `${tls ? "https" : "http"}://${
      formatAddress(
        management.hostname === "0.0.0.0" ? "127.0.0.1" : management.hostname,
        management.port,
      )
    }`;
    const dataUrl = `http://${
      formatAddress(data.hostname === "0.0.0.0" ? "127.0.0.1" : data.hostname, data.port)
    }`;
    // The cluster listener's own address (a wildcard bind is shown as loopback, as above).
    const clusterUrl = clusterListener
      ? `https://${
        formatAddress(
          clusterListener.hostname === "0.0.0.0" ? "127.0.0.1" : clusterListener.hostname,
          clusterListener.port,
        )
      }`
      : undefined;
    await composed.start(managementUrl);
    // Freed C-heap pages in glibc's per-thread arenas back to the system (mod/core/malloc_trim.ts).
    const mallocTrimmer = startMallocTrimmer();
    // A woken event loop takes its core back at once (mod/core/thread_slice.ts).
    shortenThreadSlice();
    deps.logger.info("waf started", {
      data_plane: formatAddress(data.hostname, data.port),
      management: `${managementUrl}`,
      ...(clusterUrl ? { cluster: clusterUrl } : {}),
      data_dir: dataDir,
    });

    const timeoutMs = durationMs(config.server.shutdown_timeout);
    let stopping: Promise<void> | undefined;
    const shutdown = (): Promise<void> => {
      stopping ??= (async () => {
        readiness.shuttingDown = true;
        deps.logger.info("shutting down", { deadline_ms: timeoutMs });
        let timer: ReturnType<typeof setTimeout> | undefined;
        const deadline = new Promise<"timeout">((resolve) => {
          timer = setTimeout(() => resolve("timeout"), timeoutMs);
        });
        const drained = (async () => {
          await data.shutdown();
          await https?.shutdown();
          await management.shutdown();
          await clusterListener?.shutdown();
          return "drained" as const;
        })();
        const outcome = await Promise.race([drained, deadline]);
        clearTimeout(timer);
        if (outcome === "timeout") {
          deps.logger.warn("shutdown deadline reached with requests still in flight");
        }
        await composed.close();
        await mallocTrimmer.stop();
        deps.logger.info("stopped");
      })();
      return stopping;
    };

    return {
      db: composed.db,
      data,
      management,
      readiness,
      managementUrl,
      dataUrl,
      dataPlane,
      dataWorkers: workers,
      dataHttpsUrl: https ? `https://${formatAddress(https.hostname, https.port)}` : undefined,
      routes: composed.routes,
      identity: composed.identity,
      apiAccess: composed.apiAccess,
      ai: composed.ai,
      monitor: composed.monitor,
      cluster: composed.cluster,
      clusterUrl,
      ops: composed.ops,
      shutdown,
    };
  } catch (err) {
    for (const l of listeners) await l.shutdown().catch(() => {});
    await composed.close().catch(() => {});
    throw err;
  }
}
