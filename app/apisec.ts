/**
 * Composes API security for `app/data_plane.ts`: the stored settings' compiler (which the
 * compiled policy is built from), then, with the policy and the protection documents' service in
 * hand, the settings service (seeded from `waf.yaml`), the data plane's per-process runtime and
 * the management routes.
 */
import { createApiSecEndpointsRepo } from "../db/apisec_endpoints_repo.ts";
import type { PolicyObjectsRepo } from "../db/policy_objects_repo.ts";
import type { Db } from "../db/store.ts";
import type { InventorySource } from "../mod/apisec/endpoints_query.ts";
import { createInventory, type Inventory } from "../mod/apisec/inventory.ts";
import type { Config } from "../mod/config/config.ts";
import { compileApiSec, type CompiledApiSec, NO_APISEC } from "../mod/apisec/apisec_compile.ts";
import { type ApiSecRuntime, createApiSecRuntime } from "../mod/apisec/apisec_runtime.ts";
import { apisecStoredSchema } from "../mod/apisec/apisec_schema.ts";
import {
  APISEC_KIND,
  type ApiSecSettings,
  createApiSecSettings,
  SECRET_OWNER,
} from "../mod/apisec/apisec_settings.ts";
import type { Clock } from "../mod/core/clock.ts";
import { AppError } from "../mod/core/errors.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { Random } from "../mod/core/random.ts";
import { createSecretBox } from "../mod/core/secret_box.ts";
import type { DeploymentKeys } from "../mod/core/deployment_keys.ts";
import type { Policy } from "../mod/data_plane/policy.ts";
import type { PolicyObjects } from "../mod/protection/policy_objects.ts";
import { parseStored } from "../mod/protection/protection_schema.ts";
import { apisecRoutes } from "../routes/api/apisec.ts";
import type { RouteDef } from "../routes/api/route.ts";

/** Compiles the stored settings; reuses the last result while the document is unchanged. */
export function openApiSecStore(
  repo: Pick<PolicyObjectsRepo, "get">,
): { compile(): CompiledApiSec } {
  let lastJson: string | undefined;
  let last: CompiledApiSec = NO_APISEC;
  return {
    compile() {
      const json = repo.get(APISEC_KIND, APISEC_KIND)?.config;
      if (json !== lastJson) {
        const previous = last;
        last = compileApiSec(parseStored(apisecStoredSchema, json));
        lastJson = json;
        // Requests in flight on the previous policy keep working (RE2 compiles a private copy
        // for a released expression's call).
        previous.holder.release();
      }
      return last;
    },
  };
}

export interface ApiSecPlane {
  readonly settings: ApiSecSettings;
  /** What the data-plane transaction calls per request. */
  readonly runtime: ApiSecRuntime;
  readonly routes: readonly RouteDef[];
  /** Settles once `waf.yaml`'s blocks are in the store; rejects naming a bad key. */
  readonly ready: Promise<void>;
  /** The discovered API inventory. */
  readonly inventory: Inventory;
  /** The inventory with the settings it is judged against (the API's and the assistant's). */
  readonly source: InventorySource;
  /** Starts the inventory's drain and flush timer. */
  start(): void;
  /** Stops the timer and stores what discovery gathered. */
  stop(): void;
}

export interface ApiSecDeps {
  readonly config: Config;
  readonly objects: PolicyObjects;
  readonly repo: PolicyObjectsRepo;
  readonly policy: Policy;
  readonly db: Db;
  readonly dataDir: string;
  /** The deployment's sealing and signing keys, resolved once at start-up. */
  readonly keys: DeploymentKeys;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  /** The measured clock offset token checks apply (`time.apply_offset`). */
  readonly timeOffsetMs?: () => number;
}

export function createApiSecPlane(deps: ApiSecDeps): ApiSecPlane {
  const box = createSecretBox(deps.keys.sealing, deps.random);
  const settings = createApiSecSettings({
    objects: deps.objects,
    siteExists: (id) => deps.repo.siteExists(id),
    box,
  });
  const { discovery, validation, auth, rate_limits } = deps.config.apisec;
  const ready = settings.seed({ discovery, validation, auth, rate_limits }).then(
    () => {},
    (err) => {
      if (!(err instanceof AppError)) throw err;
      const field = String(err.details?.["field"] ?? "");
      throw new AppError(
        400,
        "CONFIG_INVALID",
        `Invalid waf.yaml key "apisec.${field}": ${err.message}`,
      );
    },
  );
  const inventory = createInventory({
    repo: createApiSecEndpointsRepo(deps.db),
    clock: deps.clock,
    logger: deps.logger,
  });
  const source = {
    compiled: () => deps.policy.current.apisec ?? NO_APISEC,
    inventory,
    schemas: () => settings.get().validation.schemas,
  };
  return {
    settings,
    source,
    runtime: createApiSecRuntime({
      clock: deps.clock,
      logger: deps.logger,
      openSecret: (sealed) => box.open(sealed, SECRET_OWNER),
      inventory,
      timeOffsetMs: deps.timeOffsetMs,
    }),
    routes: apisecRoutes({
      settings,
      ...source,
      audit: deps.objects,
      upstreamKind: (id) => deps.policy.current.sites.find((s) => s.id === id)?.upstreamKind,
    }),
    ready,
    inventory,
    start: () => inventory.start(),
    stop: () => inventory.stop(),
  };
}
