/**
 * `waf setup url`: rotates the first-install setup token from the host. It runs as its own
 * process, so it stores the new token's hash in the store (the running server reads it at
 * the next request), writes a fresh `<data-dir>/runtime/setup.url` (mode 0600, valid 10
 * minutes) and prints only that file's path and the token's receipt, never the token.
 */
import { createAuditRepo } from "../db/audit_repo.ts";
import { createSettingsRepo } from "../db/settings_repo.ts";
import { transaction } from "../db/store.ts";
import { openOperatorStore } from "./operator_store.ts";
import { createUsersRepo } from "../db/users_repo.ts";
import { createAudit } from "../mod/core/audit.ts";
import { parseListen } from "../mod/config/config_schema.ts";
import {
  isSetupComplete,
  issueSetupToken,
  SETUP_KEYS,
  SETUP_TTL_MS,
} from "../mod/identity/setup_token.ts";
import { type Command, EXIT_FAILURE, EXIT_OK } from "./context.ts";
import { startOperator } from "./operator.ts";

export const setupUrlCommand: Command = async (args, global, deps) => {
  const started = await startOperator(global, deps, { words: ["setup", "url"], args });
  if (typeof started === "number") return started;
  const { t, loaded } = started;
  const db = openOperatorStore(loaded, deps, t, { create: false, missingId: "setup.no_store" });
  if (!db) return EXIT_FAILURE;
  try {
    const settings = createSettingsRepo(db);
    if (isSetupComplete(settings, createUsersRepo(db))) {
      deps.stderr(`${t("setup.already_complete")}\n`);
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
      `${t("setup.link_written", { path: issued.path, minutes: SETUP_TTL_MS / 60_000 })}\n` +
        `${t("setup.receipt", { receipt: issued.receipt })}\n`,
    );
    return EXIT_OK;
  } finally {
    db.close();
  }
};
