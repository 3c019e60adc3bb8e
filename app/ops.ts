/**
 * Composes operations: the one task scheduler with every periodic maintenance routine of the
 * process (they used to be timers of their own in each area), and its routes. Built last: its
 * tasks call into the data plane, identity, API access and monitoring.
 */
import { z } from "zod";
import { createOpsTasksRepo } from "../db/ops_tasks_repo.ts";
import { type Db, transaction } from "../db/store.ts";
import type { Audit } from "../mod/core/audit.ts";
import type { Clock } from "../mod/core/clock.ts";
import type { Config } from "../mod/config/config.ts";
import { createStorage, type Storage } from "../mod/ops/storage.ts";
import { storageRoutes } from "../routes/api/storage.ts";
import { acmeRoutes } from "../routes/api/acme.ts";
import { type Acme, createAcme } from "../mod/tls/acme.ts";
import { createSettingsRepo } from "../db/settings_repo.ts";
import { createSecretBox } from "../mod/core/secret_box.ts";
import type { DeploymentKeys } from "../mod/core/deployment_keys.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { Random } from "../mod/core/random.ts";
import { createScheduler, type Scheduler } from "../mod/ops/scheduler.ts";
import type { SharedStore } from "../mod/ops/run_owners.ts";
import type { TaskDef } from "../mod/ops/task.ts";
import { backupToFolder, runStoreJob } from "../mod/ops/store_jobs.ts";
import { analyzePgStore, checkPgStore, pgDumpBackup } from "../mod/ops/pg_maintenance.ts";
import { productionStoreOptions } from "../mod/config/production.ts";
import { SCHEMA_VERSION } from "../db/migrations.ts";
import type { RouteDef } from "../routes/api/route.ts";
import { opsTaskRoutes } from "../routes/api/ops_tasks.ts";
import type { ApiAccess } from "./api_access.ts";
import type { DataPlane } from "./data_plane.ts";
import type { Identity } from "./identity.ts";
import { MAINTENANCE_EVERY_MS } from "./identity.ts";
import type { MonitorCore, MonitorPlane } from "./monitor.ts";
import type { StoreFacts } from "../mod/deployment/store_facts.ts";

export interface OpsDeps {
  readonly db: Db;
  readonly audit: Audit;
  readonly dataDir: string;
  /** The local SQLite file (`waf.db`, or `access_log.db` on the production profile). */
  readonly logPath: string;
  /** The management database's facts, for `GET /api/storage`. */
  readonly storeFacts: StoreFacts;
  /** The deployment's sealing and signing keys, resolved once at start-up. */
  readonly keys: DeploymentKeys;
  readonly config: Config;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly core: MonitorCore;
  readonly plane: MonitorPlane;
  readonly dataPlane: DataPlane;
  readonly identity: Identity;
  readonly apiAccess: ApiAccess;
  /** The deployment-wide lease of a scheduled task (several controllers: one runs it). */
  readonly lease?: (task: string) => Promise<boolean>;
  /** The controllers sharing the store (production): runs are judged against the registry. */
  readonly shared?: SharedStore;
  /** How often the ACME client polls the CA while it validates (tests shorten it). */
  readonly acmeBackoff?: { attempts: number; minMs: number; maxMs: number };
  /** The ACME client's first retry delay for a request that got no answer (tests shorten it). */
  readonly acmeRetryDelayMs?: number;
}

export interface OpsPlane {
  readonly scheduler: Scheduler;
  /** ACME certificates for sites (issued on request, renewed by `certificate-renewal`). */
  readonly acme: Acme;
  /** Site routes (ACME): part of the policy, so a cluster node refuses their writes. */
  readonly siteRoutes: readonly RouteDef[];
  readonly storage: Storage;
  readonly routes: readonly RouteDef[];
  start(): void;
  stop(): Promise<void>;
}

const MIN = 60_000;
const HOUR = 60 * MIN;

const backupSettings = z.strictObject({
  folder: z.string().max(4096).refine((f) => f === "" || f.startsWith("/"), {
    message: 'an absolute path, or "" for <data-dir>/backups',
  }).default(""),
  keep: z.number().int().min(1).max(1000).default(7),
});

const optimizeSettings = z.strictObject({
  vacuum_free_ratio: z.number().min(0).max(1).default(0.25),
});

/** Every routine the scheduler runs, with its default schedule. */
export function maintenanceTasks(deps: OpsDeps, acme: Acme): TaskDef<never>[] {
  const { dataPlane, identity, apiAccess, core, plane, clock } = deps;
  const dbPath = `${deps.dataDir}/waf.db`;
  const pg = deps.config.storage.profile === "production"
    ? productionStoreOptions(deps.config)
    : undefined;
  const timeSync = core.timeSync;
  const tasks: TaskDef<never>[] = [
    {
      id: "access-log-retention",
      title: "Access-log retention",
      description:
        "Deletes access-log records older than storage.access_logs.retention_days, and any backlog beyond max_records (every write keeps that limit), in bounded slices on the writer thread.",
      schedule: { every_ms: 10 * MIN },
      runAtStart: true,
      // Each controller's own access-log file.
      scope: "controller",
      run: async () => ({ deleted: await dataPlane.accessLog.prune() }),
    },
    {
      id: "api-token-cleanup",
      title: "API token cleanup",
      description:
        "Deletes expired API tokens and those unused for 180 days; a token creation brings the next run to 10 minutes later, bounded by 60 minutes after the first creation of the batch.",
      schedule: { every_ms: 6 * HOUR },
      dueAt: () => apiAccess.cleanup.schedule.deadline,
      run: () => ({ removed: apiAccess.cleanup.run().length }),
    },
    {
      id: "identity-maintenance",
      title: "Sessions and sign-in state",
      description:
        "Purges ended sessions, expired CAPTCHA and throttle state and the setup token's file, writes the counts of aggregated refused sign-ins, and sweeps used two-factor codes.",
      schedule: { every_ms: MAINTENANCE_EVERY_MS },
      // Mostly this process's memory (setup sessions, lockouts, throttles, the refused sign-ins
      // it aggregated, used codes) and its setup file; the shared purges are idempotent deletes.
      scope: "controller",
      run: async () => {
        await identity.maintenance();
        apiAccess.twoFactor.sweep();
      },
    },
    {
      id: "threat-feeds",
      title: "Threat-feed synchronisation",
      description:
        "Downloads every enabled threat feed whose own refresh interval has passed and swaps in its indicators.",
      schedule: { every_ms: MIN },
      run: async () => {
        await dataPlane.protection.feeds.tick();
      },
    },
    // On production the same three tasks (ids, schedules, settings) act on the PostgreSQL store:
    // the check, `pg_dump` and `ANALYZE` (mod/ops/pg_maintenance.ts).
    {
      id: "store-integrity",
      title: "Store integrity check",
      description: pg
        ? "Reads and counts every management table of the production database and checks its schema version; a failure notifies."
        : "PRAGMA integrity_check on the store, on a thread of its own; a damaged store fails the run (and notifies).",
      schedule: { cron: "30 3 * * *" },
      jitterMs: 30 * MIN,
      run: async () => {
        if (pg) {
          const r = await checkPgStore(pg);
          if (r.schema_version !== SCHEMA_VERSION) {
            throw new Error(
              `The production database is at schema version ${r.schema_version}; this build expects ${SCHEMA_VERSION}`,
            );
          }
          return { result: "ok", schema_version: r.schema_version, tables: r.tables.length };
        }
        const r = await runStoreJob({ kind: "integrity", path: dbPath });
        if (r.kind !== "ok") throw new Error(`Integrity check failed: ${r.problems.join("; ")}`);
        return { result: "ok", schema_version: r.schemaVersion };
      },
    },
    {
      id: "store-backup",
      title: "Store backup",
      description: pg
        ? "pg_dump (custom format) of the production database's schema into the backup folder as waf-YYYYMMDD-HHMMSS.dump, checked with pg_restore --list, keeping the newest `keep` copies. Needs the PostgreSQL client tools on this host; keep the deployment key file apart."
        : "An online, checked copy of the store (VACUUM INTO) into the backup folder as waf-YYYYMMDD-HHMMSS.db, keeping the newest `keep` copies.",
      schedule: { cron: "0 2 * * *" },
      jitterMs: 30 * MIN,
      settings: backupSettings,
      run: async ({ settings }: { settings: z.infer<typeof backupSettings> }) => {
        const folder = settings.folder || `${deps.dataDir}/backups`;
        return pg
          ? { ...await pgDumpBackup(pg, folder, settings.keep, clock.now()) }
          : await backupToFolder(dbPath, folder, settings.keep, clock.now());
      },
    } as TaskDef<z.infer<typeof backupSettings>> as unknown as TaskDef<never>,
    {
      id: "store-optimize",
      title: "Store optimisation",
      description: pg
        ? "ANALYZE of every management table of the production database (PostgreSQL's autovacuum reclaims free space itself; vacuum_free_ratio applies to a SQLite store only)."
        : "PRAGMA optimize and a WAL checkpoint; VACUUM when at least vacuum_free_ratio of the pages are free (VACUUM holds the write lock while it rewrites the file).",
      schedule: { cron: "0 4 * * 0" },
      jitterMs: 30 * MIN,
      settings: optimizeSettings,
      run: async ({ settings }: { settings: z.infer<typeof optimizeSettings> }) =>
        pg ? { ...await analyzePgStore(pg) } : {
          ...await runStoreJob({
            kind: "optimize",
            path: dbPath,
            vacuumFreeRatio: settings.vacuum_free_ratio,
          }),
        },
    } as TaskDef<z.infer<typeof optimizeSettings>> as unknown as TaskDef<never>,
    {
      id: "certificate-check",
      title: "Certificate expiry check",
      description:
        "Warns (a notification) about site certificates that expire within monitor.alerts.certificate_days.",
      schedule: { every_ms: 6 * HOUR },
      runAtStart: true,
      run: () => ({ expiring: plane.certificates.check() }),
    },
    {
      id: "certificate-renewal",
      title: "ACME certificate renewal",
      description:
        "Renews the ACME certificate of every site that expires within 30 days, and retries the sites whose last order failed (each failure notifies).",
      schedule: { every_ms: 12 * HOUR },
      jitterMs: HOUR,
      run: () => acme.renewDue(),
    },
    {
      id: "time-sync",
      title: "Time synchronisation",
      description:
        "Measures the host clock against the active SNTP server of time.servers (reselecting when it stops answering); a run where no server answers fails.",
      schedule: { every_ms: timeSync.intervalMs > 0 ? timeSync.intervalMs : HOUR },
      enabled: timeSync.periodic(),
      runAtStart: true,
      // Each controller's own host clock (and the offset its checks apply).
      scope: "controller",
      run: async () => {
        const v = await timeSync.sync();
        if (v.active === null) throw new Error("No time server answered");
        return { active: v.active, offset_ms: v.offset_ms };
      },
    },
  ];
  return tasks;
}

export function createOps(deps: OpsDeps): OpsPlane {
  const tx = <T>(fn: () => T): T => transaction(deps.db, fn);
  const sites = deps.dataPlane.sites;
  const acme = createAcme({
    settings: createSettingsRepo(deps.db),
    box: createSecretBox(deps.keys.sealing, deps.random),
    audit: deps.audit,
    clock: deps.clock,
    logger: deps.logger,
    transaction: tx,
    site: (id) => {
      try {
        return sites.get(id);
      } catch {
        return undefined;
      }
    },
    install: (id, pair, who) => sites.installCertificate(id, pair, "acme", who),
    challenges: deps.dataPlane.acmeChallenges,
    notify: deps.core.notify,
    publish: (payload) => deps.core.bus.publish("acme.certificate", payload),
    backoff: deps.acmeBackoff,
    retryDelayMs: deps.acmeRetryDelayMs,
  });
  const scheduler = createScheduler({
    repo: createOpsTasksRepo(deps.db),
    clock: deps.clock,
    random: deps.random,
    logger: deps.logger,
    transaction: tx,
    notify: deps.core.notify,
    publish: (kind, payload) => deps.core.bus.publish(kind, payload),
    lease: deps.lease,
    shared: deps.shared,
  }, maintenanceTasks(deps, acme));
  const storage = createStorage({
    dataDir: deps.dataDir,
    localPath: deps.logPath,
    management: deps.storeFacts.database,
    clock: deps.clock,
    accessLog: () => deps.dataPlane.accessLog.stats(),
    redisUrl: deps.config.storage.redis?.url,
    backupFolder: () =>
      (scheduler.get("store-backup").settings as { folder: string }).folder ||
      `${deps.dataDir}/backups`,
    pruneAccessLogs: (before) => deps.dataPlane.accessLog.pruneBefore(before),
    pgSink: deps.dataPlane.pgSink,
    audit: deps.audit,
    transaction: tx,
  });
  const sink = { audit: deps.audit, transaction: tx };
  return {
    scheduler,
    storage,
    acme,
    routes: [...opsTaskRoutes({ ...sink, scheduler }), ...storageRoutes({ ...sink, storage })],
    siteRoutes: acmeRoutes({ ...sink, acme }),
    start: () => scheduler.start(),
    stop: () => scheduler.stop(),
  };
}
