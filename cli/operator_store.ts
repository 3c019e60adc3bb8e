/**
 * The one way the operator commands (`waf user ...`, `waf setup url`) open the management store:
 * the store the loaded configuration names (app/store.ts), so on `storage.profile: production`
 * they act on the PostgreSQL store every controller shares, on `temporary` on `<data-dir>/waf.db`.
 */
import { openManagementDb, productionPg } from "../app/store.ts";
import { type Db, SchemaTooNewError } from "../db/store.ts";
import { maskUrlPassword } from "../mod/core/redact.ts";
import type { Translate } from "./i18n/i18n.ts";
import type { CommandDeps } from "./context.ts";
import type { Loaded } from "./load_config.ts";
import { storePath } from "./operator.ts";

/** Where the store of `loaded` is, as the operator reads it (a DSN with its password masked). */
export function storeLocation(loaded: Loaded): string {
  const pg = productionPg(loaded.config);
  return pg ? `${maskUrlPassword(pg.dsn)} (schema ${pg.schema})` : storePath(loaded.dataDir);
}

/**
 * Opens (migrating, like `waf serve`) the configured store, or says why not on stderr and
 * answers undefined. Only `create` may bring a missing SQLite file into existence.
 */
export function openOperatorStore(
  loaded: Loaded,
  deps: CommandDeps,
  t: Translate,
  options: { readonly create: boolean; readonly missingId?: "store.missing" | "setup.no_store" },
): Db | undefined {
  const production = productionPg(loaded.config) !== undefined;
  const path = storeLocation(loaded);
  if (!production) {
    if (!options.create) {
      try {
        Deno.statSync(storePath(loaded.dataDir));
      } catch {
        deps.stderr(`${t(options.missingId ?? "store.missing", { path })}\n`);
        return undefined;
      }
    } else {
      Deno.mkdirSync(loaded.dataDir, { recursive: true, mode: 0o700 });
    }
  }
  try {
    return openManagementDb(loaded.config, loaded.dataDir, {
      now: deps.clock.now(),
      controllerId: `cli-${Deno.pid}`,
    });
  } catch (err) {
    if (err instanceof SchemaTooNewError) {
      deps.stderr(`${t("store.schema_too_new", { found: err.found, known: err.known })}\n`);
    } else {
      const error = (err as Error).message.replaceAll(
        productionPg(loaded.config)?.dsn ?? "\u0000",
        path,
      );
      deps.stderr(`${t("store.open_failed", { path, error })}\n`);
    }
    return undefined;
  }
}
