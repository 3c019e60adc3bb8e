/**
 * The coordinator a composition uses: PostgreSQL when the store is the production one, the
 * single-process one otherwise.
 */
import type { Config } from "../config/config.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { productionStoreOptions } from "../config/production.ts";
import { type Coordinator, createLocalCoordinator } from "./coordinator.ts";
import { createPgCoordinator } from "./pg_coordinator.ts";

/** What a store says about itself (the PostgreSQL store: its engine, controller id and schema). */
interface StoreFacts {
  readonly engine?: "sqlite" | "postgresql";
  readonly controllerId?: string;
  readonly schema?: string;
}

/** `storage.production.postgresql` as the coordinator needs it. */
function productionDsn(config: Config): { dsn: string; connectTimeoutMs: number } | undefined {
  const options = productionStoreOptions(config);
  return options && { dsn: options.dsn, connectTimeoutMs: options.connectTimeoutMs };
}

export function openCoordinator(deps: {
  readonly db: unknown;
  readonly config: Config;
  readonly clock: Clock;
  readonly logger: Logger;
}): Coordinator {
  const store = deps.db as StoreFacts;
  const now = () => deps.clock.now();
  const pg = store.engine === "postgresql" ? productionDsn(deps.config) : undefined;
  const controllerId = store.controllerId ?? crypto.randomUUID();
  if (!pg) return createLocalCoordinator({ controllerId, now });
  return createPgCoordinator({
    ...pg,
    controllerId,
    schema: store.schema,
    now,
    warn: (message, fields) => deps.logger.warn(`deployment coordinator: ${message}`, fields),
  });
}
