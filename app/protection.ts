/**
 * Composes the protection controls for `app/data_plane.ts`: the policy-objects store and its
 * compiler (plugged into the compiled policy), the per-request runtime and its connector gate,
 * and the management routes. Everything here shares the data plane's store and policy.
 */
import { createAuditRepo } from "../db/audit_repo.ts";
import { createPolicyObjectsRepo } from "../db/policy_objects_repo.ts";
import type { Db } from "../db/store.ts";
import { createAudit } from "../mod/core/audit.ts";
import type { Clock } from "../mod/core/clock.ts";
import type { Config } from "../mod/config/config.ts";
import { loadGeoIp } from "../mod/protection/geoip.ts";
import { type Alap, createAlap } from "../mod/protection/alap.ts";
import { alapRoutes } from "../routes/api/alap.ts";
import { createEdgeCache } from "../mod/protection/edge_cache.ts";
import { createGoodBotVerifier, denoResolver, type Resolver } from "../mod/protection/good_bots.ts";
import { edgeRoutes } from "../routes/api/edge.ts";
import { createEdgeResponder } from "../routes/proxy/edge_response.ts";
import { blockPageRoutes, configuredBlockPage } from "../routes/api/block_pages.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { Policy } from "../mod/data_plane/policy.ts";
import { createPolicyObjects, type PolicyObjects } from "../mod/protection/policy_objects.ts";
import {
  type CompiledProtection,
  createProtectionCompiler,
} from "../mod/protection/protection_compile.ts";
import { createProtectionRuntime } from "../mod/protection/protection_runtime.ts";
import type { Random } from "../mod/core/random.ts";
import { createProtectionGate, type ProtectionGate } from "../routes/proxy/protection_gate.ts";
import { protectionRoutes } from "../routes/api/protection.ts";
import { threatIntelRoutes } from "../routes/api/threat_intel.ts";
import { createThreatFeeds, type ThreatFeeds } from "../mod/protection/threat_feeds.ts";
import type { RouteDef } from "../routes/api/route.ts";

export interface ProtectionPlane {
  readonly objects: PolicyObjects;
  /** Compiles the controls; passed to `createPolicy`. */
  readonly compile: () => CompiledProtection;
  readonly gate: ProtectionGate;
  readonly feeds: ThreatFeeds;
  readonly alap: Alap;
  readonly routes: readonly RouteDef[];
  /** Connects the policy once it exists (changes rebuild it). */
  attach(policy: Policy): void;
  close(): Promise<void>;
}

export interface ProtectionDeps {
  readonly config: Config;
  readonly db: Db;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  /** DNS for crawler verification (tests inject one; default `Deno.resolveDns`). */
  readonly resolver?: Resolver;
  /** The stored access-log record (JSON) of a trace id, for false-positive marks. */
  readonly findAccessRecord: (traceId: string) => Promise<string | undefined>;
}

export function createProtectionPlane(deps: ProtectionDeps): ProtectionPlane {
  const { db, clock, random } = deps;
  const repo = createPolicyObjectsRepo(db);
  const audit = createAudit({ repo: createAuditRepo(db), clock });
  let policy: Policy | undefined;
  const objects = createPolicyObjects({
    db,
    repo,
    audit,
    clock,
    random,
    onChange: () => policy?.rebuild(),
  });
  const geoFile = deps.config.protection.geoip.file;
  const geo = geoFile === undefined ? undefined : loadGeoIp(geoFile);
  const compiler = createProtectionCompiler(geo);
  const runtime = createProtectionRuntime({ clock, random });
  const alap = createAlap({
    db,
    objects,
    audit,
    clock,
    logger: deps.logger,
    rebuild: () => policy?.rebuild(),
    findRecord: deps.findAccessRecord,
  });
  const cache = createEdgeCache();
  const gate = createProtectionGate({
    runtime,
    clock,
    random,
    edge: createEdgeResponder({ cache, clock }),
    goodBots: createGoodBotVerifier({ resolver: deps.resolver ?? denoResolver, clock }),
    current: () => policy?.current.protection,
    blockPage: configuredBlockPage,
    observe: (site, record, inspection, p) =>
      alap.observe(site.id, record.client_ip, record.trace_id, inspection, p.alapPolicy),
  });
  const feeds = createThreatFeeds({
    objects,
    clock,
    logger: deps.logger,
    rebuild: () => policy?.rebuild(),
    enforced: () => policy?.current.protection,
  });
  return {
    objects,
    compile: () =>
      compiler({ rows: (k) => repo.list(k), singleton: (k) => repo.get(k, k)?.config }),
    gate,
    feeds,
    alap,
    routes: [
      ...alapRoutes(alap, objects),
      ...blockPageRoutes(objects),
      ...edgeRoutes(objects, cache),
      ...protectionRoutes(objects, { hasGeo: geo !== undefined }),
      ...threatIntelRoutes({ objects, feeds }),
    ],
    attach(p) {
      policy = p;
      feeds.start();
    },
    async close() {
      await feeds.stop();
      alap.flush();
    },
  };
}
