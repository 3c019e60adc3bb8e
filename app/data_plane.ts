/**
 * Composes the data plane for `app/server.ts`: sites service and compiled policy, the access
 * log pipeline (with the optional PostgreSQL sink), the proxy connector, its management routes,
 * and the optional HTTPS listener with a certificate per site.
 */
import { createAccessLogRepo } from "../db/access_log_repo.ts";
import { createWorkerWriter } from "../mod/access_log/worker_writer.ts";
import { createPgSink } from "../db/pg_sink.ts";
import { createSettingsRepo } from "../db/settings_repo.ts";
import { createSitesRepo } from "../db/sites_repo.ts";
import type { SiteConfig } from "../mod/data_plane/site_schema.ts";
import { SETUP_KEYS } from "../mod/identity/setup_token.ts";
import { type Db, type SqliteDb, transaction } from "../db/store.ts";
import { type AccessLog, createAccessLog } from "../mod/access_log/access_log.ts";
import { lineFormat } from "../mod/access_log/lines.ts";
import { sqliteAccessLogReader } from "../db/access_log_reader.ts";
import { productionAccessLog, productionLogDatabase } from "./access_log_production.ts";
import type { Audit } from "../mod/core/audit.ts";
import type { Clock } from "../mod/core/clock.ts";
import { type Config, durationMs } from "../mod/config/config.ts";
import { parseListen } from "../mod/config/config_schema.ts";
import type { EventLog } from "../mod/core/event_log.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { Notifications } from "../mod/core/notifications.ts";
import { recordEvents } from "../mod/data_plane/record_events.ts";
import {
  type AcmeChallenges,
  createAcmeChallenges,
  shareAcmeChallenges,
  type SharedAcmeChallenges,
} from "../mod/data_plane/acme_challenges.ts";
import { createAcmeChallengesRepo } from "../db/acme_challenges_repo.ts";
import { createPgShipper } from "../mod/access_log/pg_shipper.ts";
import {
  createPgSinkConfig,
  type PgSinkConfig,
  type PgSinkSettings,
} from "../mod/access_log/pg_sink_config.ts";
import { createSinkSlot } from "../mod/access_log/sinks.ts";
import { createSecretBox } from "../mod/core/secret_box.ts";
import type { DeploymentKeys } from "../mod/core/deployment_keys.ts";
import {
  type CompiledPolicy,
  createPolicy,
  type Policy,
  type SiteUpstreamHealth,
} from "../mod/data_plane/policy.ts";
import type { SiteCounterSet } from "../mod/data_plane/site_counters.ts";
import type { AccessRecord } from "../mod/access_log/record.ts";
import type { Random } from "../mod/core/random.ts";
import { createSites, type Sites } from "../mod/data_plane/sites.ts";
import { deploymentSiteKeys, resealLegacy, sealedSitesRepo } from "../mod/data_plane/site_keys.ts";
import {
  createSnapshotTap,
  type PolicySnapshot,
  type SnapshotTap,
} from "../mod/data_plane/policy_snapshot.ts";
import type { EdgeCache } from "../mod/protection/edge_cache.ts";
import type { DataHandler } from "../routes/proxy/status_page.ts";
import { logRoutes } from "../routes/api/logs.ts";
import { createProxyApp, type DataApp } from "../routes/proxy/data_app.ts";
import type { Proxy } from "../routes/proxy/proxy.ts";
import type { BrokenRequest } from "../net/http1_framing.ts";
import { limitsFromConfig } from "./connection_limits.ts";
import { type ConnectionStats, createConnectionStats } from "../mod/core/connection_stats.ts";
import { createProtectionPlane, openProtectionStore, type ProtectionPlane } from "./protection.ts";
import { IpListFoldThread } from "../mod/protection/ip_list_fold_thread.ts";
import { type ApiSecPlane, createApiSecPlane, openApiSecStore } from "./apisec.ts";
import type { RouteDef } from "../routes/api/route.ts";
import { siteRoutes } from "../routes/api/sites.ts";
import { onboardingRoutes } from "../routes/api/onboarding.ts";
import { createOnboarding, type ListenAddress } from "../mod/data_plane/onboarding.ts";
import { createBlockPagePreviews } from "../mod/protection/block_page_previews.ts";
import { VERSION } from "../mod/core/version.ts";
import { startTlsFront, type TlsFront } from "../routes/proxy/tls_front.ts";
import type { PatternTester } from "../mod/protection/pattern_tester.ts";

export interface DataPlane {
  readonly sites: Sites;
  readonly policy: Policy;
  readonly accessLog: AccessLog;
  /** Pending ACME HTTP-01 answers the data plane serves (the ACME issuer adds them). */
  readonly acmeChallenges: SharedAcmeChallenges;
  /** The PostgreSQL sink's run-time configuration (`PUT /api/storage/sink`). */
  readonly pgSink: PgSinkConfig;
  readonly proxy: Proxy;
  /** The protection controls' services, per-request controls and routes. */
  readonly protection: ProtectionPlane;
  /** API security: settings, per-request runtime and routes. */
  readonly apisec: ApiSecPlane;
  /** The IP list's fold thread (closing ends it; tests wait for its folds). */
  readonly ipFolds: IpListFoldThread;
  /** Management routes of the data plane (`/api/sites`, `/api/logs`). */
  readonly routes: readonly RouteDef[];
  /** The plain-HTTP data listener's handler. */
  readonly handler: DataHandler;
  /** The connection front answered a request with bad framing: its access-log record. */
  readonly badFraming: (client: string, request: BrokenRequest) => void;
  /** Opens the HTTPS listener when `server.data.https_listen` is set. */
  startHttps(): Promise<TlsFront | undefined>;
  /**
   * Where the listeners listen once open (the first-site test request goes to the data one;
   * no upstream check reaches either).
   */
  listening(at: { readonly data: ListenAddress; readonly management: ListenAddress }): void;
  /** Closes the HTTPS listener, flushes the access log and closes sinks and pools. */
  close(): Promise<void>;
  /** What the current policy was built from (only when `workers` was set). */
  snapshot(): PolicySnapshot | undefined;
  /** Calls `listener` after every policy swap. */
  onSwap(listener: () => void): void;
}

export interface DataPlaneDeps {
  readonly config: Config;
  readonly db: Db;
  /** The access log's database (on `temporary` the store itself). */
  readonly logDb: SqliteDb;
  /** The access log's file, which its writer thread opens on its own connection. */
  readonly dbPath: string;
  /**
   * This controller's id (the coordinator's): in the production profile every access-log record
   * it ships to the deployment's table carries it. Default: a random one.
   */
  readonly controllerId?: string;
  /** The data directory (the key that seals the API-security shared secret). */
  readonly dataDir: string;
  /** The deployment's sealing and signing keys, resolved once at start-up. */
  readonly keys: DeploymentKeys;
  /** The process's one audit trail. */
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  /** The runtime log's rate-limited events (blocks, upstream failures, policy swaps, ALAP). */
  readonly events?: EventLog;
  /** Per-site request counters (monitoring reads them). */
  readonly counters?: SiteCounterSet;
  /** Upstream health changes (monitoring's events, notifications and metrics). */
  readonly upstreamHealth?: SiteUpstreamHealth;
  /** Sees every finished request (the realtime feed's blocked and challenged requests). */
  readonly observe?: (record: AccessRecord) => void;
  /** Told after each policy swap. */
  readonly swapped?: () => void;
  /** The listeners' connection counters (the HTTPS listener's count under `data`). */
  readonly connections?: ConnectionStats;
  /** The measured clock offset JWT `exp`/`nbf` checks apply (`time.apply_offset`; 0 when off). */
  readonly timeOffsetMs?: () => number;
  /** The process's notifications (ALAP's block notices reach the channels and realtime feed). */
  readonly notifications?: Notifications;
  /** The management listener's addresses and signed-in clients, which ALAP never blocks. */
  readonly managementClients?: { has(ip: string): boolean };
  /** The regex tester (default: one on a worker of its own). */
  readonly patternTester?: PatternTester;
  /**
   * Set when data-plane workers serve the listeners: the policy builds are recorded for them
   * (`snapshot`), and the edge cache the routes purge is the workers' (`app/data_workers.ts`).
   */
  readonly workers?: {
    readonly edgeCache: EdgeCache;
    readonly acmeChallenges: AcmeChallenges;
    /** Resolves once every worker has sent the records it holds. */
    flush(): Promise<void>;
  };
}

export function createDataPlane(deps: DataPlaneDeps): DataPlane {
  const { config, db, audit, clock, random, logger } = deps;
  // The policy first: what changes it (sites, protection services) gets it when built.
  const { sitesRepo, ipFolds, store, policy, builds } = buildPolicy(deps);
  const started = startAccessLog(deps);
  const { pgSink } = started;
  // With workers, a read first collects what they hold, so a trace id just answered is found.
  const accessLog = deps.workers
    ? readsAfter(started.accessLog, deps.workers.flush)
    : started.accessLog;
  const protection = createProtectionPlane({
    store,
    policy,
    db,
    audit,
    clock,
    random,
    logger,
    events: deps.events,
    findAccessRecord: async (traceId) => (await accessLog.get(traceId))?.record,
    edgeCache: deps.workers?.edgeCache,
    notifications: deps.notifications,
    managementClients: deps.managementClients,
    tester: deps.patternTester,
  });
  const apisec = createApiSecPlane({
    config,
    objects: protection.objects,
    repo: store.repo,
    policy,
    db,
    dataDir: deps.dataDir,
    keys: deps.keys,
    clock,
    random,
    logger,
    timeOffsetMs: deps.timeOffsetMs,
  });
  apisec.start();
  const settings = createSettingsRepo(db);
  const sites = createSites({
    db,
    repo: sitesRepo,
    audit,
    policy,
    clock,
    random,
    defaultLevel: () => settings.get(SETUP_KEYS.siteLevel) as SiteConfig["level"] | undefined,
  });
  // Shared through the store: the CA's request may reach any controller of the deployment.
  const acmeChallenges = shareAcmeChallenges(
    deps.workers?.acmeChallenges ?? createAcmeChallenges(),
    createAcmeChallengesRepo(db, () => clock.now()),
    (message, err) => logger.warn(message, { error: err as Error }),
  );
  // Both listeners (HTTP here, HTTPS through the TLS front) run requests through the Hono app.
  const { proxy, data } = createProxyApp({
    acme: acmeChallenges,
    policy,
    accessLog,
    clock,
    random,
    logger,
    protection: protection.controls,
    apisec: apisec.runtime,
  });
  const handler: DataHandler = (req, info) =>
    data.handle(req, (info.remoteAddr as Deno.NetAddr).hostname, "http");
  let https: TlsFront | undefined;
  let listeners: { data: ListenAddress; management: ListenAddress } | undefined;
  const onboarding = createOnboarding({
    sites,
    accessLog,
    dataAddress: () => listeners?.data,
    managementPort: () => listeners?.management.port,
    pages: createBlockPagePreviews({ clock, random }),
    monotonic: () => performance.now(),
    userAgent: `waf-first-site/${VERSION}`,
  });

  return {
    sites,
    policy,
    accessLog,
    pgSink,
    acmeChallenges,
    proxy,
    protection,
    apisec,
    ipFolds,
    routes: [
      ...siteRoutes(sites),
      ...onboardingRoutes(onboarding),
      ...logRoutes(accessLog, clock),
      ...protection.routes,
      ...apisec.routes,
    ],
    handler,
    badFraming: (client, request) => proxy.refused(client, request),
    async startHttps() {
      https = await startHttps({ deps, policy, data, proxy });
      return https;
    },
    listening: (at) => {
      listeners = at;
    },
    snapshot: () => builds.snapshot,
    onSwap: (listener) => builds.onSwap(listener),
    async close() {
      await https?.shutdown();
      await accessLog.stop();
      apisec.stop();
      proxy.close();
      await protection.close();
      // The IP list's fold thread ends now: a fold under way (stuck, say) fails, the list keeps
      // its base and pending changes, and shutdown does not wait for it.
      await ipFolds.stop();
    },
  };
}

/**
 * The compiled policy and what it is built from: the sealed sites, the protection store (its IP
 * list folded on `ipFolds`) and, with workers, the reads of each build (`builds`).
 */
function buildPolicy(deps: DataPlaneDeps) {
  const { config, db, clock, logger } = deps;
  const sitesRepo = sealedSites(deps);
  // With workers, every build's reads are recorded: the workers compile the same snapshot.
  const tap = deps.workers ? createSnapshotTap() : undefined;
  // A fold of the IP list given up on its thread (no answer in time) is logged.
  const ipFolds = new IpListFoldThread({ log: (message, fields) => logger.warn(message, fields) });
  const store = openProtectionStore(db, config, tap?.source, ipFolds.server);
  const builds = new PolicyBuilds(tap);
  const policy = createPolicy({
    listSites: tap ? () => tap.sites(sitesRepo.list()) : () => sitesRepo.list(),
    clock,
    compileProtection: store.compile,
    compileApiSec: openApiSecStore(tap ? tap.get(store.repo) : store.repo).compile,
    counters: deps.counters,
    upstreamHealth: deps.upstreamHealth,
    swapped: (p, ms) => {
      builds.record(p);
      deps.swapped?.();
      builds.swapped();
      deps.events?.event("policy_swap", "policy swapped", {
        version: p.version,
        sites: p.sites.length,
        compile_ms: Math.round(ms),
      });
    },
  });
  builds.record(policy.current);
  return { sitesRepo, ipFolds, store, policy, builds };
}

/**
 * The sites repository, private keys sealed at rest: the ones an older build stored in plain
 * text are sealed here, before the first policy build.
 */
function sealedSites(deps: DataPlaneDeps) {
  const { db, logger } = deps;
  const rawSites = createSitesRepo(db);
  const siteKeys = deploymentSiteKeys(deps.keys, deps.random, logger);
  const resealed = transaction(db, () => resealLegacy(rawSites, siteKeys));
  if (resealed > 0) {
    logger.info("sealed site private keys stored in plain text", { sites: resealed });
  }
  return sealedSitesRepo(rawSites, siteKeys);
}

/** What the policy in force was built from, and who is told after each swap. */
class PolicyBuilds {
  readonly #tap: SnapshotTap | undefined;
  readonly #listeners: Array<() => void> = [];
  #built: PolicySnapshot | undefined;

  constructor(tap: SnapshotTap | undefined) {
    this.#tap = tap;
  }

  /** What the current policy was built from (only with a tap). */
  get snapshot(): PolicySnapshot | undefined {
    return this.#built;
  }

  /**
   * Taken when a build completes, since a build that fails part-way leaves the tap with its
   * partial reads (a restarted worker starting from those would lose every kind read after the
   * failure: rate limits, threat feeds, API security).
   */
  record(p: CompiledPolicy): void {
    this.#built = this.#tap?.snapshot(p.version, p.protection?.ipList.state);
  }

  onSwap(listener: () => void): void {
    this.#listeners.push(listener);
  }

  swapped(): void {
    for (const l of this.#listeners) l();
  }
}

/** Opens the HTTPS listener when `server.data.https_listen` is set. */
async function startHttps(
  on: {
    readonly deps: DataPlaneDeps;
    readonly policy: Policy;
    readonly data: DataApp;
    readonly proxy: Proxy;
  },
): Promise<TlsFront | undefined> {
  const { deps, policy, data, proxy } = on;
  const { config, logger } = deps;
  const listenAt = config.server.data.https_listen;
  if (listenAt === undefined) return undefined;
  const addr = parseListen(listenAt)!;
  const limits = config.server.data.limits;
  return await startTlsFront({
    hostname: addr.hostname,
    port: addr.port,
    policy,
    handle: data.handle,
    logger,
    front: limits.enabled
      ? {
        limits: limitsFromConfig(limits),
        stats: (deps.connections ?? createConnectionStats()).listener("data"),
        onBadFraming: (client, request) => proxy.refused(client, request, "https"),
      }
      : undefined,
  });
}

/** Beside the store: the access log's rows that must not be lost and did not fit in memory. */
export const ACCESS_LOG_SPILL_FILE = "access_log.spill";

/** The access-log pipeline: queue, writer thread, optional PostgreSQL shipper, retention. */
function startAccessLog(deps: DataPlaneDeps): { accessLog: AccessLog; pgSink: PgSinkConfig } {
  const { config, logger, db, clock } = deps;
  const writer = createWorkerWriter(deps.dbPath, {
    onEscalate: (info) =>
      logger.warn(
        "access-log writer thread fell behind at low priority; replaced by one at normal priority",
        info,
      ),
    onDeescalate: (info) =>
      logger.info("access-log writer calm at normal priority; back to a low-priority thread", info),
    onThreadError: (info) =>
      logger.error("access-log writer thread failed; its batches go to the spill file", info),
  });
  const slot = createSinkSlot();
  const open = (s: PgSinkSettings) =>
    createPgSink({
      dsn: s.dsn,
      poolSize: s.pool_size,
      connectTimeoutSeconds: Math.max(1, Math.ceil(s.connect_timeout_ms / 1000)),
    });
  const ship = (s: PgSinkSettings | null) =>
    s === null ? null : createPgShipper(open(s), writer, {
      batchSize: s.batch_size,
      insertTimeoutMs: s.insert_timeout_ms,
    }, { logger, clock });
  const pg = config.storage.postgresql;
  const file: PgSinkSettings | undefined = pg && {
    dsn: pg.dsn,
    pool_size: pg.pool_size,
    batch_size: pg.batch_size,
    connect_timeout_ms: durationMs(pg.connect_timeout),
    insert_timeout_ms: durationMs(pg.insert_timeout),
  };
  const pgSink = createPgSinkConfig({
    settings: createSettingsRepo(db),
    box: createSecretBox(deps.keys.sealing, deps.random),
    audit: deps.audit,
    clock,
    transaction: (fn) => transaction(db, fn),
    file,
    probe: async (s) => {
      const sink = createPgSink({
        dsn: s.dsn,
        poolSize: 1,
        connectTimeoutSeconds: Math.max(1, Math.ceil(s.connect_timeout_ms / 1000)),
      });
      try {
        return await sink.version();
      } finally {
        await sink.close().catch(() => {});
      }
    },
    apply: (s) => slot.replace(() => ship(s)),
  });
  // The stored run-time configuration, when there is one, replaces the file's (opening its
  // sealed DSN is asynchronous; the slot ships nothing until then).
  if (pgSink.overridden()) {
    pgSink.start().catch((err) =>
      logger.error("PostgreSQL access-log sink: the stored configuration could not be applied", {
        error: err as Error,
      })
    );
  } else void slot.replace(() => ship(file ?? null));
  const logs = config.storage.access_logs;
  const repo = createAccessLogRepo(deps.logDb, lineFormat);
  const database = productionLogDatabase(config);
  const sites = createSitesRepo(db);
  const production = database && productionAccessLog({
    database,
    controllerId: deps.controllerId ?? crypto.randomUUID(),
    source: writer,
    local: sqliteAccessLogReader(repo),
    siteIds: (name) => {
      const id = sites.getByName(name)?.id;
      return id === undefined ? [] : [id];
    },
    batchSize: logs.batch_size,
    clock,
    logger,
  });
  const accessLog = createAccessLog({
    queueSize: logs.queue_size,
    batchSize: logs.batch_size,
    retentionDays: logs.retention_days,
    maxRecords: logs.max_records,
    spillPath: `${deps.dataDir}/${ACCESS_LOG_SPILL_FILE}`,
  }, {
    repo,
    writer,
    clock,
    logger,
    sinks: production ? [slot, production.sink] : [slot],
    views: production?.views,
    observe: both(deps.events ? recordEvents(deps.events) : undefined, deps.observe),
  });
  accessLog.start();
  if (!production) return { accessLog, pgSink };
  // Production: retention and the storage clean-up also apply to the deployment's table (this
  // controller's own file keeps its `max_records` at every write).
  const days = logs.retention_days * 86_400_000;
  return {
    accessLog: {
      ...accessLog,
      prune: async () =>
        await accessLog.prune() +
        await production.prune(clock.now() - days, logs.max_records),
      pruneBefore: async (before) =>
        await accessLog.pruneBefore(before) +
        await production.prune(before, Number.MAX_SAFE_INTEGER),
    },
    pgSink,
  };
}

function both<T>(
  a: ((v: T) => void) | undefined,
  b: ((v: T) => void) | undefined,
): ((v: T) => void) | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  return (v) => {
    a(v);
    b(v);
  };
}

/** The access log whose store reads first wait for `before` (the workers' records). */
function readsAfter(log: AccessLog, before: () => Promise<void>): AccessLog {
  return {
    ...log,
    list: async (filter) => (await before(), log.list(filter)),
    page: async (filter) => (await before(), log.page(filter)),
    get: async (traceId) => (await before(), log.get(traceId)),
    lookup: async (traceId) => (await before(), log.lookup(traceId)),
    counts: async (filter) => (await before(), log.counts(filter)),
    top: async (...args) => (await before(), log.top(...args)),
    summary: async (range) => (await before(), log.summary(range)),
  };
}
