/** `waf serve`: runs both listeners until SIGINT/SIGTERM, then shuts down gracefully. */
import { SchemaTooNewError } from "../db/store.ts";
import { SetupTokenError } from "../mod/setup_token.ts";
import { createLogger } from "../mod/logger.ts";
import { parseFlags } from "./args.ts";
import { type Command, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "./context.ts";
import { loadConfig } from "./load_config.ts";
import { ProductionStorageUnavailableError, startServer } from "./server.ts";

export const serveCommand: Command = async (args, global, deps) => {
  const flags = parseFlags(args, {});
  if (flags.kind === "error") {
    deps.stderr(`waf serve: ${flags.message}
Run "waf help serve" for usage.
`);
    return EXIT_USAGE;
  }
  const loaded = await loadConfig(global, deps, true);
  if (!loaded) return EXIT_USAGE;
  const logger = createLogger({
    format: global.logFormat ?? loaded.config.logging.format,
    level: loaded.config.logging.level,
    now: deps.clock.now,
  });
  if (loaded.created) logger.info("created default configuration", { path: loaded.configPath });
  // Listen for signals before anything starts, so a signal during start-up is not lost.
  const signalled = Promise.withResolvers<void>();
  const onSignal = () => signalled.resolve();
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    let server;
    try {
      server = await startServer({ config: loaded.config, dataDir: loaded.dataDir }, {
        clock: deps.clock,
        random: deps.random,
        logger,
        env: deps.env,
      });
    } catch (err) {
      if (err instanceof SetupTokenError) {
        // The message names the problem, never the value.
        deps.stderr(`${err.message}\n`);
        return EXIT_USAGE;
      }
      if (err instanceof ProductionStorageUnavailableError || err instanceof SchemaTooNewError) {
        deps.stderr(`${err.message}\n`);
        return EXIT_FAILURE;
      }
      if (err instanceof Deno.errors.AddrInUse || err instanceof Deno.errors.PermissionDenied) {
        deps.stderr(`Cannot open a listener: ${err.message}\n`);
        return EXIT_FAILURE;
      }
      throw err;
    }
    await signalled.promise;
    await server.shutdown();
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
  return EXIT_OK;
};
