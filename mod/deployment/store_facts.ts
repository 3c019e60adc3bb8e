/**
 * What the System and Storage pages show about the management database: the profile, the engine,
 * where the database is (a DSN with its password masked, or the SQLite file), its schema version,
 * whether it answers and how fast (one `SELECT 1` timed at request time), and the deployment's
 * controllers with the scheduled tasks each one's lease covers.
 *
 * During an outage the answer still comes: `available: false`, no latency, the schema version
 * last read, and the controllers only if the coordinator's own connection still gets them.
 */
import { type Db, engineOf, pingStore, schemaVersion } from "../../db/store.ts";
import type { Config } from "../config/config.ts";
import { productionStoreOptions, redactDsn } from "../config/production.ts";
import type { ControllerView, Coordinator } from "./coordinator.ts";

/** Where the management database is, as an answer may show it. */
export interface DatabaseLocation {
  /** The DSN with its password masked (PostgreSQL) or the file's path (SQLite). */
  readonly location: string;
  /** The PostgreSQL schema holding the store; null on SQLite. */
  readonly schema: string | null;
}

/** The management database's facts (`management` of `GET /api/storage`). */
export interface DatabaseFacts {
  readonly profile: "temporary" | "production";
  readonly engine: "sqlite" | "postgresql";
  readonly database: DatabaseLocation & { readonly schema_version: number | null };
  readonly available: boolean;
  /** `ok`, `unavailable` (the database does not answer) or `starting`. */
  readonly state: "ok" | "unavailable" | "starting";
  /** The `SELECT 1` round trip in milliseconds; null when the database did not answer. */
  readonly latency_ms: number | null;
}

/** `GET /api/system/storage`: the database's facts and the controllers (null: not known now). */
export interface StoreFactsView extends DatabaseFacts {
  readonly controllers: ControllerView[] | null;
}

export interface StoreFactsDeps {
  readonly db: Db;
  readonly profile: "temporary" | "production";
  readonly location: DatabaseLocation;
  readonly coordinator: Coordinator;
  /** The store's state as readiness reports it (`storeState`): `starting` is kept as it is. */
  readonly state: () => "ok" | "unavailable" | "starting";
  /** A monotonic time in milliseconds (the latency's stopwatch). */
  readonly elapsed?: () => number;
  /** How long the controllers may take to answer before they are reported unknown. */
  readonly controllersTimeoutMs?: number;
}

/** Where `config`'s management database is: the PostgreSQL store or `<dataDir>/waf.db`. */
export function databaseLocation(config: Config, dataDir: string): DatabaseLocation {
  const pg = config.storage.profile === "production" ? productionStoreOptions(config) : undefined;
  return pg
    ? { location: redactDsn(pg.dsn), schema: pg.schema }
    : { location: `${dataDir}/waf.db`, schema: null };
}

/** True while the PostgreSQL store's connection thread finds the database unreachable. */
function knownDown(db: Db): boolean {
  return (db as { unavailable?: boolean }).unavailable === true;
}

const round = (ms: number) => Math.round(ms * 100) / 100;

export function createStoreFacts(deps: StoreFactsDeps) {
  const elapsed = deps.elapsed ?? (() => performance.now());
  const engine = engineOf(deps.db);
  /** The schema version last read: what an answer during an outage still knows. */
  let lastVersion: number | null = null;
  try {
    lastVersion = schemaVersion(deps.db);
  } catch {
    // Read again by the first answer that reaches the database.
  }

  /** Pings the store and reads its schema version; never throws. */
  const database = (): DatabaseFacts => {
    let latency: number | null = null;
    if (!knownDown(deps.db)) {
      try {
        const started = elapsed();
        pingStore(deps.db);
        latency = round(elapsed() - started);
        lastVersion = schemaVersion(deps.db);
      } catch {
        // Unreachable (or it went away between the two statements): reported, not thrown.
        latency = null;
      }
    }
    const available = latency !== null;
    const state = deps.state() === "starting" ? "starting" : available ? "ok" : "unavailable";
    return {
      profile: deps.profile,
      engine,
      database: { ...deps.location, schema_version: lastVersion },
      available,
      state,
      latency_ms: latency,
    };
  };

  /** The controllers, or null when the coordinator cannot list them within the time allowed. */
  const controllers = async (): Promise<ControllerView[] | null> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), deps.controllersTimeoutMs ?? 3_000);
    });
    try {
      return await Promise.race([deps.coordinator.controllers(), late]);
    } catch {
      return null;
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    database,
    async view(): Promise<StoreFactsView> {
      const facts = database();
      return { ...facts, controllers: await controllers() };
    },
  };
}

export type StoreFacts = ReturnType<typeof createStoreFacts>;
