/**
 * Composes the protection controls for `app/data_plane.ts`, in an order that needs no late
 * binding: first the stored controls and their compiler (`openProtectionStore`, which the
 * compiled policy is built from), then, with the policy in hand, the services that change the
 * controls and rebuild it, the data plane's per-request controls, and the management routes.
 */
import { createPolicyObjectsRepo, type PolicyObjectsRepo } from "../db/policy_objects_repo.ts";
import { createPolicyChangeLog } from "../db/policy_object_changes.ts";
import type { Db } from "../db/store.ts";
import type { Audit } from "../mod/core/audit.ts";
import type { Clock } from "../mod/core/clock.ts";
import { createBlockPagePreviews } from "../mod/protection/block_page_previews.ts";
import type { Config } from "../mod/config/config.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { Random } from "../mod/core/random.ts";
import type { Policy } from "../mod/data_plane/policy.ts";
import type { GeoLookup } from "../engine/acl.ts";
import type { IpListFolder } from "../mod/protection/ip_list_updater.ts";
import { loadGeoIp } from "../mod/protection/geoip.ts";
import { type Alap, createAlap } from "../mod/protection/alap.ts";
import { createNotificationsRepo } from "../db/notifications_repo.ts";
import type { EventLog } from "../mod/core/event_log.ts";
import { createNotifications, type Notifications } from "../mod/core/notifications.ts";
import { createEdgeCache, type EdgeCache } from "../mod/protection/edge_cache.ts";
import { createGoodBotVerifier, denoResolver, type Resolver } from "../mod/protection/good_bots.ts";
import { createPolicyObjects, type PolicyObjects } from "../mod/protection/policy_objects.ts";
import { PatternTester } from "../mod/protection/pattern_tester.ts";
import {
  type CompiledProtection,
  createProtectionCompiler,
  KIND,
  type ProtectionSource,
} from "../mod/protection/protection_compile.ts";
import { createProtectionRuntime } from "../mod/protection/protection_runtime.ts";
import { createThreatFeeds, type ThreatFeeds } from "../mod/protection/threat_feeds.ts";
import { alapRoutes } from "../routes/api/alap.ts";
import { blockPageRoutes } from "../routes/api/block_pages.ts";
import { edgeRoutes } from "../routes/api/edge.ts";
import { protectionRoutes } from "../routes/api/protection.ts";
import type { RouteDef } from "../routes/api/route.ts";
import { threatIntelRoutes } from "../routes/api/threat_intel.ts";
import { createEdgeResponder } from "../routes/proxy/edge_response.ts";
import type { ProtectionControls } from "../routes/proxy/transaction.ts";

/** The stored controls and their compiler: what the compiled policy is built from. */
export interface ProtectionStore {
  readonly repo: PolicyObjectsRepo;
  readonly geo: GeoLookup | undefined;
  /** Compiles the controls from the store; passed to `createPolicy`. */
  compile(): CompiledProtection;
}

/**
 * `tap` wraps the compiler's reads (the data-plane workers' policy snapshot records them, see
 * `mod/data_plane/policy_snapshot.ts`); `ipFold` folds the IP list's changes into a new base (the
 * server's: on a thread of its own, `mod/protection/ip_list_fold_thread.ts`; default: in the
 * build).
 */
export function openProtectionStore(
  db: Db,
  config: Config,
  tap: (source: ProtectionSource) => ProtectionSource = (s) => s,
  ipFold?: IpListFolder,
): ProtectionStore {
  const repo = createPolicyObjectsRepo(db);
  // The IP list, up to 100,000 entries, is updated by the changed entries, not compiled again.
  const compiler = protectionCompiler(config, ipFold);
  const ipChanges = createPolicyChangeLog(db, KIND.ip);
  const source = tap({
    rows: (kind: string) => repo.list(kind),
    singleton: (kind: string) => repo.get(kind, kind)?.config,
    ipChanges: (limit) => ipChanges.take(limit),
    ipEntry: (id) => repo.get(KIND.ip, id),
  });
  return { repo, geo: compiler.geo, compile: () => compiler.compile(source) };
}

/** The protection compiler with the configured GeoIP database (a data-plane worker's too). */
export function protectionCompiler(config: Config, ipFold?: IpListFolder) {
  const geoFile = config.protection.geoip.file;
  const geo = geoFile === undefined ? undefined : loadGeoIp(geoFile);
  return { geo, compile: createProtectionCompiler(geo, ipFold) };
}

export interface ProtectionPlane {
  readonly objects: PolicyObjects;
  /** What the data-plane transaction calls per request. */
  readonly controls: ProtectionControls;
  readonly feeds: ThreatFeeds;
  readonly alap: Alap;
  readonly routes: readonly RouteDef[];
  close(): Promise<void>;
}

export interface ProtectionDeps {
  readonly store: ProtectionStore;
  /** The compiled policy (built from `store`); changes here rebuild it. */
  readonly policy: Policy;
  readonly db: Db;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  /** DNS for crawler verification (tests inject one; default `Deno.resolveDns`). */
  readonly resolver?: Resolver;
  /** The stored access-log record (JSON) of a trace id, for false-positive marks. */
  readonly findAccessRecord: (traceId: string) => Promise<string | undefined>;
  /** The runtime log's rate-limited events (ALAP proposals). */
  readonly events?: EventLog;
  /** The edge cache the routes purge and report (default: this thread's own). */
  readonly edgeCache?: EdgeCache;
  /** The process's notifications (inbox, channels, realtime); default: the inbox alone. */
  readonly notifications?: Notifications;
  /** The management listener's addresses and signed-in clients, which ALAP never blocks. */
  readonly managementClients?: { has(ip: string): boolean };
  /** The regex tester (default: one on a worker of its own, with the default time limit). */
  readonly tester?: PatternTester;
}

export function createProtectionPlane(deps: ProtectionDeps): ProtectionPlane {
  const { db, audit, clock, random, policy, store } = deps;
  const rebuild = (): void => void policy.rebuild();
  const objects = createPolicyObjects({
    db,
    repo: store.repo,
    audit,
    clock,
    random,
    onChange: rebuild,
  });
  const alap = createAlap({
    db,
    objects,
    audit,
    notifications: deps.notifications ??
      createNotifications({ repo: createNotificationsRepo(db), clock, random }),
    events: deps.events,
    clock,
    logger: deps.logger,
    rebuild,
    findRecord: deps.findAccessRecord,
    clients: {
      management: (ip) => deps.managementClients?.has(ip) ?? false,
      trustedProxy: (ip) => policy.current.sites.some((s) => s.trustedProxies.has(ip)),
    },
    siteName: (id) => policy.current.sites.find((s) => s.id === id)?.name,
  });
  const feeds = createThreatFeeds({
    objects,
    clock,
    logger: deps.logger,
    rebuild,
    enforced: () => policy.current.protection,
  });
  const cache = deps.edgeCache ?? createEdgeCache();
  const tester = deps.tester ?? new PatternTester();
  const controls: ProtectionControls = {
    runtime: createProtectionRuntime({ clock, random }),
    clock,
    random,
    edge: createEdgeResponder({ cache, clock }),
    goodBots: createGoodBotVerifier({ resolver: deps.resolver ?? denoResolver, clock }),
    alap,
  };
  return {
    objects,
    controls,
    feeds,
    alap,
    routes: [
      ...alapRoutes(alap, objects),
      ...blockPageRoutes(objects, createBlockPagePreviews({ clock, random: deps.random })),
      ...edgeRoutes(objects, cache),
      ...protectionRoutes(objects, { hasGeo: store.geo !== undefined, tester }),
      ...threatIntelRoutes({ objects, feeds }),
    ],
    async close() {
      tester.close();
      await feeds.stop();
      alap.flush();
    },
  };
}
