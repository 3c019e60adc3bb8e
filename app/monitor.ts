/**
 * Composes observability: the realtime event bus, the administrator inbox with its notification
 * channels and dispatcher, upstream health, the per-site counters (before the data plane, which
 * binds them into its policy), then - once the data plane exists - the Prometheus metrics, the
 * rollups behind the dashboard API, the attack-spike and certificate alerts, time
 * synchronisation and every route of these areas.
 */
import { type ConnectionStats, createConnectionStats } from "../mod/core/connection_stats.ts";
import { createMonitorRepo } from "../db/monitor_repo.ts";
import { createNotificationsRepo } from "../db/notifications_repo.ts";
import { createNotifyRepo } from "../db/notify_repo.ts";
import { type Db, transaction } from "../db/store.ts";
import type { Audit } from "../mod/core/audit.ts";
import { type Clock, OffsetClock } from "../mod/core/clock.ts";
import type { Logger } from "../mod/core/logger.ts";
import { ManagementClients } from "../mod/core/management_clients.ts";
import { createNotifications, type Notifications, type Notify } from "../mod/core/notifications.ts";
import type { Random } from "../mod/core/random.ts";
import { createSecretBox } from "../mod/core/secret_box.ts";
import type { DeploymentKeys } from "../mod/core/deployment_keys.ts";
import { VERSION } from "../mod/core/version.ts";
import { type Config, durationMs } from "../mod/config/config.ts";
import { parseListen } from "../mod/config/config_schema.ts";
import { SiteCounterSet } from "../mod/data_plane/site_counters.ts";
import { createAttackSpike } from "../mod/monitor/attack_spike.ts";
import { createCertificateWatch } from "../mod/monitor/certificates.ts";
import { createDashboard } from "../mod/monitor/dashboard.ts";
import { createEventBus, type EventBus } from "../mod/monitor/event_bus.ts";
import {
  connectionsCollector,
  createMetrics,
  dataPlaneCollector,
  ManagementCounters,
  type Metrics,
  processCollector,
  startLagSampler,
} from "../mod/monitor/metrics.ts";
import { createRollups, type Rollups } from "../mod/monitor/rollups.ts";
import { ALL } from "../mod/monitor/rollup_cells.ts";
import { createUpstreamHealth } from "../mod/monitor/upstream_health.ts";
import { createChannels } from "../mod/notify/channels.ts";
import { createDispatcher, type Dispatcher } from "../mod/notify/dispatcher.ts";
import { createTimeSync, type TimeSync } from "../mod/ops/time_sync.ts";
import type { Ctx } from "../routes/api/env.ts";
import { monitorRoutes } from "../routes/api/monitor.ts";
import { notificationChannelRoutes } from "../routes/api/notification_channels.ts";
import { realtimeRoutes } from "../routes/api/realtime.ts";
import type { RouteDef } from "../routes/api/route.ts";
import { timeSyncRoutes } from "../routes/api/time_sync.ts";
import type { DataPlane } from "./data_plane.ts";
import { deliveriesCollector, realtimeCollector, timeCollector } from "./monitor_collectors.ts";

const SAMPLE_EVERY_MS = 5_000;
const PERSIST_EVERY_MS = 60_000;
const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export interface MonitorDeps {
  readonly db: Db;
  readonly audit: Audit;
  readonly config: Config;
  readonly dataDir: string;
  /** The deployment's sealing and signing keys, resolved once at start-up. */
  readonly keys: DeploymentKeys;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  /**
   * The deployment-wide lease of a monitoring routine, given when several controllers may share
   * the store (the production profile): the attack-spike alert judges on its holder only.
   */
  readonly lease?: (routine: string) => Promise<boolean>;
}

/** What exists before the data plane and identity: they publish into it. */
export interface MonitorCore {
  readonly bus: EventBus;
  readonly notifications: Notifications;
  readonly notify: Notify;
  readonly dispatcher: Dispatcher;
  readonly counters: SiteCounterSet;
  readonly upstreamHealth: ReturnType<typeof createUpstreamHealth>;
  /** The clock of TOTP, JWT and heartbeat checks (`time.apply_offset`). */
  readonly timeClock: OffsetClock;
  readonly timeSync: TimeSync;
  readonly management: ManagementCounters;
  /** The management listener's addresses and its signed-in clients (ALAP never blocks them). */
  readonly managementClients: ManagementClients;
  /** Policy swaps since start. */
  swaps: number;
  /** The listeners' connection fronts: open, refused and closed-early connections. */
  readonly connections: ConnectionStats;
  readonly routes: RouteDef[];
  /** The management app's observer: request metrics and `config.changed` events. */
  observe(c: Ctx, status: number): void;
}

export function createMonitorCore(deps: MonitorDeps): MonitorCore {
  const { config, clock, logger } = deps;
  const tx = <T>(fn: () => T): T => transaction(deps.db, fn);
  const bus = createEventBus({ clock });
  const channels = createChannels({
    repo: createNotifyRepo(deps.db),
    box: createSecretBox(deps.keys.sealing, deps.random),
    clock,
    random: deps.random,
  });
  const dispatcher = createDispatcher({
    repo: createNotifyRepo(deps.db),
    channels,
    clock,
    random: deps.random,
    logger,
    consoleUrl: config.server.management.base_url,
  });
  const notifications = createNotifications({
    repo: createNotificationsRepo(deps.db),
    clock,
    random: deps.random,
    created: (view, data) => {
      try {
        dispatcher.offer(view, data);
      } catch (err) {
        logger.error("notification channels could not be offered a notification", {
          error: err as Error,
        });
      }
      bus.publish("notification.created", { ...view, data });
    },
  });
  const notify: Notify = (n) => notifications.notifyAdmins(n);
  const upstreamHealth = createUpstreamHealth({ bus, clock, notify });
  const timeClock = new OffsetClock(clock);
  const t = config.time;
  const timeSync = createTimeSync({
    servers: t.servers,
    applyOffset: t.apply_offset,
    maxOffsetMs: durationMs(t.max_offset),
    intervalMs: durationMs(t.sync_interval),
    timeoutMs: durationMs(t.query_timeout),
  }, {
    clock,
    adjusted: timeClock,
    logger,
    notify,
    measured: (v) =>
      bus.publish("time.sync", {
        active: v.active,
        offset_ms: v.offset_ms,
        offset_exceeded: v.offset_exceeded,
      }),
  });
  const management = new ManagementCounters();
  const managementClients = new ManagementClients(
    clock,
    listenerAddresses(config.server.management.listen),
  );
  const sink = { audit: deps.audit, transaction: tx };
  const core: MonitorCore = {
    bus,
    notifications,
    notify,
    dispatcher,
    counters: new SiteCounterSet(),
    upstreamHealth,
    timeClock,
    timeSync,
    management,
    managementClients,
    swaps: 0,
    connections: createConnectionStats(),
    routes: [
      ...notificationChannelRoutes({ ...sink, channels, dispatcher }),
      ...realtimeRoutes({
        bus,
        heartbeatMs: durationMs(config.monitor.realtime.heartbeat),
        baseUrl: config.server.management.base_url,
      }),
    ],
    observe(c, status) {
      const route = c.get("route") ?? "unmatched";
      management.count(c.req.method, route, status);
      if (c.get("principal")) managementClients.remember(c.get("clientIp"));
      if (UNSAFE.has(c.req.method) && status >= 200 && status < 300 && c.get("principal")) {
        const p = c.get("principal")!;
        bus.publish("config.changed", {
          method: c.req.method,
          route,
          path: c.req.path,
          status,
          actor: p.kind === "user" ? p.name : `token:${p.id}`,
          trace_id: c.get("traceId"),
        });
      }
    },
  };
  return core;
}

/** The management listener's own addresses: its listen address, or every interface's for `0.0.0.0`/`::`. */
function listenerAddresses(listen: string): string[] {
  const host = parseListen(listen)?.hostname ?? "";
  if (host !== "0.0.0.0" && host !== "::") return [host];
  try {
    return Deno.networkInterfaces().map((i) => i.address);
  } catch {
    // Without --allow-sys the host's addresses are unknown; its signed-in clients still count.
    return [];
  }
}

export interface MonitorPlane {
  readonly metrics: Metrics;
  readonly rollups: Rollups;
  /** The certificate-expiry watch (the scheduler's `certificate-check` task). */
  readonly certificates: ReturnType<typeof createCertificateWatch>;
  /** Monitoring's own routes (metrics, summary, series). */
  readonly monitorRoutes: readonly RouteDef[];
  /** Routes of the system family (time synchronisation), mounted with the system API. */
  readonly systemRoutes: readonly RouteDef[];
  start(): void;
  stop(): Promise<void>;
}

/** The parts that read the data plane: metrics, rollups, alerts, and the routes. */
export function createMonitorPlane(
  core: MonitorCore,
  dataPlane: DataPlane,
  deps: MonitorDeps,
): MonitorPlane {
  const { config, clock, logger } = deps;
  const tx = <T>(fn: () => T): T => transaction(deps.db, fn);
  const metrics = createMetrics();
  const lag = startLagSampler();
  metrics.register(dataPlaneCollector({
    counters: core.counters,
    policy: dataPlane.policy,
    accessLog: dataPlane.accessLog,
    swaps: () => core.swaps,
  }));
  metrics.register(core.upstreamHealth.collector(dataPlane.policy));
  metrics.register(connectionsCollector(core.connections));
  metrics.register(processCollector({ lag: lag.lag, startedAt: clock.now(), version: VERSION }));
  metrics.register(core.management.collect);
  metrics.register(deliveriesCollector(core.dispatcher));
  metrics.register(realtimeCollector(core.bus));
  metrics.register(timeCollector(core.timeSync));

  const alerts = config.monitor.alerts;
  // Several controllers: the alert judges the deployment's counts, on the lease holder.
  const spikeLease = deps.lease;
  const spike = createAttackSpike({
    notify: core.notify,
    threshold: alerts.attack_spike_per_minute,
    clock,
    logger,
    lease: spikeLease && (() => spikeLease("attack_spike")),
    stored: (bucket) => rollups.stored("minute", bucket, ALL),
  });
  const rollups = createRollups({
    repo: createMonitorRepo(deps.db),
    clock,
    counters: core.counters,
    drain: () => core.bus.flush(),
    minuteClosed: spike.closed,
  });
  core.bus.listen(rollups.observe);
  const dashboard = createDashboard({
    rollups,
    clock,
    sites: () => dataPlane.policy.current.sites,
  });
  const certificates = createCertificateWatch({
    policy: dataPlane.policy,
    clock,
    logger,
    notify: core.notify,
    days: alerts.certificate_days,
  });
  const repeats = new Repeats(logger);

  return {
    metrics,
    rollups,
    certificates,
    monitorRoutes: monitorRoutes({ metrics, dashboard, prometheus: config.monitor.prometheus }),
    systemRoutes: timeSyncRoutes({ audit: deps.audit, transaction: tx, timeSync: core.timeSync }),
    start() {
      repeats.every(SAMPLE_EVERY_MS, "monitoring rollup", rollups.sample);
      repeats.every(PERSIST_EVERY_MS, "monitoring rollup persistence", rollups.persist);
      if (spikeLease) {
        repeats.every(SAMPLE_EVERY_MS, "attack spike check", () => {
          spike.check().catch((err) =>
            logger.error("attack spike check failed", { error: err as Error })
          );
        });
      }
      core.dispatcher.start();
    },
    async stop() {
      repeats.stop();
      lag.stop();
      core.bus.close();
      try {
        rollups.persist();
      } catch (err) {
        logger.error("monitoring rollup persistence failed", { error: err as Error });
      }
      await core.dispatcher.stop();
      await core.timeSync.stop();
    },
  };
}

/** Routines run every so often, off the process's exit path; one that throws is logged. */
class Repeats {
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  every(ms: number, what: string, fn: () => void): void {
    const t = setInterval(() => {
      try {
        fn();
      } catch (err) {
        this.#logger.error(`${what} failed`, { error: err as Error });
      }
    }, ms);
    Deno.unrefTimer(t);
    this.#timers.push(t);
  }

  stop(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers.length = 0;
  }
}
