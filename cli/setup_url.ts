/**
 * `waf setup url`: rotates the first-install setup token from the host. It runs as its own
 * process, so it stores the new token's hash in the store (the running server reads it at
 * the next request), writes a fresh `<data-dir>/runtime/setup.url` (mode 0600, valid 10
 * minutes) and prints only that file's path and the token's receipt, never the token.
 */
import { createAuditRepo } from "../db/audit_repo.ts";
import { createSettingsRepo } from "../db/settings_repo.ts";
import { openStore, SchemaTooNewError, transaction } from "../db/store.ts";
import { createUsersRepo } from "../db/users_repo.ts";
import { createAudit } from "../mod/audit.ts";
import { parseListen } from "../mod/config_schema.ts";
import { isSetupComplete, issueSetupToken, SETUP_KEYS, SETUP_TTL_MS } from "../mod/setup_token.ts";
import { parseFlags } from "./args.ts";
import { type Command, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "./context.ts";
import { loadConfig } from "./load_config.ts";

export const setupUrlCommand: Command = async (args, global, deps) => {
  const flags = parseFlags(args, {});
  if (flags.kind === "error") {
    deps.stderr(`waf setup url: ${flags.message}\nRun "waf help setup url" for usage.\n`);
    return EXIT_USAGE;
  }
  const loaded = await loadConfig(global, deps, false);
  if (!loaded) return EXIT_USAGE;
  const path = `${loaded.dataDir}/waf.db`;
  try {
    await Deno.stat(path);
  } catch {
    deps.stderr(`No store at "${path}": start "waf serve" once with this data directory first\n`);
    return EXIT_FAILURE;
  }
  let db;
  try {
    db = openStore(path, { now: deps.clock.now() });
  } catch (err) {
    if (err instanceof SchemaTooNewError) {
      deps.stderr(`${err.message}\n`);
      return EXIT_FAILURE;
    }
    throw err;
  }
  try {
    const settings = createSettingsRepo(db);
    if (isSetupComplete(settings, createUsersRepo(db))) {
      deps.stderr("Setup is already complete: sign in on the console's /login page\n");
      return EXIT_FAILURE;
    }
    const listen = parseListen(loaded.config.server.management.listen)!;
    const derived = `${loaded.config.server.management.tls === "off" ? "http" : "https"}://${
      listen.hostname === "0.0.0.0" ? "127.0.0.1" : listen.hostname
    }:${listen.port}`;
    // The running server records the URL it actually listens on (port 0 becomes a real one).
    const baseUrl = loaded.config.server.management.base_url ??
      (settings.get(SETUP_KEYS.baseUrl) as string | undefined) ?? derived;
    const now = deps.clock.now();
    const issued = await issueSetupToken({
      settings,
      dataDir: loaded.dataDir,
      baseUrl,
      now,
      random: deps.random,
    });
    transaction(db, () =>
      createAudit({ repo: createAuditRepo(db), clock: deps.clock }).record({
        actor: { type: "cli", name: deps.env.osUser ?? "unknown" },
        action: "setup.token.rotate",
        target: "setup",
        result: "success",
        detail: { receipt: issued.receipt },
      }));
    deps.stdout(
      `Setup link written to ${issued.path} (valid for ${SETUP_TTL_MS / 60_000} minutes)\n` +
        `Receipt: ${issued.receipt}\n`,
    );
    return EXIT_OK;
  } finally {
    db.close();
  }
};
