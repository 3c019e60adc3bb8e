/**
 * Runs a composed WAF process (`app/compose.ts`): the management app and the data plane on two
 * separate listeners (and the cluster listener), readiness, and graceful shutdown. Tests start it
 * on port 0.
 */
import type { Db } from "../db/store.ts";
import { type Config, durationMs } from "../mod/config/config.ts";
import { parseListen } from "../mod/config/config_schema.ts";
import type { Readiness } from "../mod/core/readiness.ts";
import type { DataHandler } from "../routes/proxy/status_page.ts";
import {
  formatAddress,
  listen,
  type Listener,
  ListenerError,
  listenerError,
  type ListenOptions,
} from "../net/listen.ts";
import { limitsFromConfig } from "./connection_limits.ts";
import type { RouteDef } from "../routes/api/route.ts";
import type { ApiAccess } from "./api_access.ts";
import type { AiPlane } from "./ai.ts";
import type { Identity } from "./identity.ts";
import type { DataPlane } from "./data_plane.ts";
import type { ClusterPlane } from "./cluster.ts";
import type { OpsPlane } from "./ops.ts";
import {
  type ComposeDeps,
  type ComposedServer,
  composeServer,
  type Monitoring,
  type ServerOptions,
} from "./compose.ts";
import { startMallocTrimmer } from "../mod/core/malloc_trim.ts";
import { shortenThreadSlice } from "../mod/core/thread_slice.ts";
import { type DataWorkerPool, startDataWorkers } from "./data_workers.ts";

// `waf serve` tells this start-up failure apart.
export { ProductionStorageUnavailableError } from "./compose.ts";

export interface ServerDeps extends ComposeDeps {
  /** Replaces the data-plane handler (tests use it to hold a request in flight). */
  readonly dataHandler?: DataHandler;
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

/** The HTTPS data listener, when `server.data.https_listen` is set. */
type HttpsListener = { hostname: string; port: number; shutdown(): Promise<void> };

export async function startServer(
  options: ServerOptions,
  deps: ServerDeps,
): Promise<RunningServer> {
  const { config, dataDir } = options;
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
    const { data, https } = await openData(composed, config, deps);
    listeners.push(data);
    dataPlane.listening({ data, management });
    readiness.dataPlane = true;

    const managementUrl = urlOf(tls ? "https" : "http", management);
    const clusterUrl = clusterListener ? urlOf("https", clusterListener) : undefined;
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

    const shutdown = shutdownOnce({
      timeoutMs: durationMs(config.server.shutdown_timeout),
      readiness,
      logger: deps.logger,
      listeners: [data, https, management, clusterListener],
      async close() {
        await composed.close();
        await mallocTrimmer.stop();
      },
    });
    return {
      db: composed.db,
      data,
      management,
      readiness,
      managementUrl,
      dataUrl: urlOf("http", data),
      dataPlane,
      dataWorkers: composed.dataWorkers,
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

/** `scheme://host:port` of a listener, a wildcard bind shown as loopback. */
function urlOf(scheme: "http" | "https", l: { hostname: string; port: number }): string {
  return `${scheme}://${
    formatAddress(l.hostname === "0.0.0.0" ? "127.0.0.1" : l.hostname, l.port)
  }`;
}

/**
 * Opens the data plane's listeners: the workers' (they serve both data ports; the process is
 * ready once all enforce the policy), or this thread's HTTP listener and HTTPS front.
 */
async function openData(
  composed: ComposedServer,
  config: ServerOptions["config"],
  deps: ServerDeps,
): Promise<{ data: Listener; https: HttpsListener | undefined }> {
  const { dataPlane, readiness } = composed;
  const workers = composed.dataWorkers;
  if (workers) {
    const opened = await startDataWorkers(workers, {
      config,
      dataPlane,
      counters: composed.monitor.counters,
      upstreamHealth: composed.monitor.upstreamHealth.hook,
      connections: composed.monitor.connections.listener("data"),
    });
    readiness.dataPlaneCurrent = () => workers.current();
    return opened;
  }
  const dataAddr = parseListen(config.server.data.listen)!;
  const data = listen({
    name: "data",
    hostname: dataAddr.hostname,
    port: dataAddr.port,
    handler: deps.dataHandler ?? dataPlane.handler,
    front: connectionFront(config.server.data.limits, composed, "data", deps),
  });
  try {
    const https = await dataPlane.startHttps().catch((err) => {
      throw err instanceof ListenerError
        ? err
        : listenerError("data HTTPS", config.server.data.https_listen ?? "", err);
    });
    return { data, https };
  } catch (err) {
    await data.shutdown().catch(() => {});
    throw err;
  }
}

/**
 * The process's shutdown, run once however often it is asked for: drains the listeners in
 * order, bounded by the shutdown timeout, then closes.
 */
function shutdownOnce(o: {
  readonly timeoutMs: number;
  readonly readiness: Readiness;
  readonly logger: ServerDeps["logger"];
  readonly listeners: readonly ({ shutdown(): Promise<void> } | undefined)[];
  close(): Promise<void>;
}): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => {
    stopping ??= (async () => {
      o.readiness.shuttingDown = true;
      o.logger.info("shutting down", { deadline_ms: o.timeoutMs });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const deadline = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), o.timeoutMs);
      });
      const drained = (async () => {
        for (const l of o.listeners) await l?.shutdown();
        return "drained" as const;
      })();
      const outcome = await Promise.race([drained, deadline]);
      clearTimeout(timer);
      if (outcome === "timeout") {
        o.logger.warn("shutdown deadline reached with requests still in flight");
      }
      await o.close();
      o.logger.info("stopped");
    })();
    return stopping;
  };
}
