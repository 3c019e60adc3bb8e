/**
 * `waf serve`: runs both listeners until SIGINT/SIGTERM (or until the `deno task` command that
 * launched it is gone, see `launcher_watch.ts`), then shuts down gracefully. Log lines go to
 * stderr and to the size-rotated `<data-dir>/logs/waf.log` (collected by `waf logs pack`).
 */
import { SchemaTooNewError } from "../db/store.ts";
import { SetupTokenError } from "../mod/identity/setup_token.ts";
import { type LogFile, openLogFile } from "../mod/ops/log_file.ts";
import { createLogger } from "../mod/core/logger.ts";
import { guardUnhandledRejections } from "../mod/core/unhandled.ts";
import { readProc, watchLauncher } from "../mod/ops/launcher_watch.ts";
import { type Command, type CommandDeps, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from "./context.ts";
import { cliTranslator } from "./lang.ts";
import { loadConfig, type Loaded } from "./load_config.ts";
import { flagsOrUsage, stringFlag } from "./output.ts";
import { ProductionStorageUnavailableError, startServer } from "../app/server.ts";
import { ConfigProblemError, formatProblems, writeDefaultConfig } from "../mod/config/config.ts";
import { DeploymentKeysError } from "../mod/deployment/keys.ts";
import { ListenerError } from "../net/listen.ts";
import { isProductionProblem, productionReport, startProblems } from "./start_problems.ts";
import type { Translate } from "./i18n/i18n.ts";
import { configuredListeners, unbindable } from "./listen_check.ts";
import { removeCreated, snapshotDir } from "./data_dir_snapshot.ts";

function listenerFailed(t: Translate, err: ListenerError): string {
  return t("serve.listener_failed", {
    listener: err.listener,
    address: err.address,
    reason: t(`serve.listen_${err.reason}`),
  });
}

/**
 * What serve refuses before it writes anything, printed; the exit code, or undefined to go on.
 * The same checks as `waf config check` (the production profile's missing key or unreachable
 * database is the specification's own failure, ErrProductionStorageUnavailable, exit 1; the
 * others are configuration errors), then
 * every listener address: a taken port leaves no half-made data directory, and each listener
 * that cannot open is named.
 */
async function refused(
  loaded: Loaded,
  joinToken: string | undefined,
  deps: CommandDeps,
  t: Translate,
): Promise<number | undefined> {
  const problems = await startProblems(loaded.config, loaded.dataDir, joinToken);
  const production = problems.filter(isProductionProblem);
  if (production.length > 0) {
    deps.stderr(productionReport(t, production));
    return EXIT_FAILURE;
  }
  if (problems.length > 0) {
    deps.stderr(
      `${t("config.invalid", { path: loaded.configPath })}\n${formatProblems(problems)}\n`,
    );
    return EXIT_USAGE;
  }
  const unbound = unbindable(configuredListeners(loaded.config));
  if (unbound.length > 0) {
    const lines = unbound.map((err) => listenerFailed(t, err));
    deps.stderr(`${lines.join("\n")}\n${t("serve.not_started", { dir: loaded.dataDir })}\n`);
    return EXIT_FAILURE;
  }
  return undefined;
}

export const serveCommand: Command = async (args, global, deps) => {
  const { t } = await cliTranslator(global, deps);
  const flags = flagsOrUsage({ deps, t, words: ["serve"] }, args, {
    "join-token": { type: "string" },
  });
  if (typeof flags === "number") return flags;
  const loaded = await loadConfig(global, deps, t);
  if (!loaded) return EXIT_USAGE;
  // Lines logged before the log file may be opened (the production profile must fail before
  // writing anything) wait here and are written once it is.
  let logFile: LogFile | undefined;
  const pending: string[] = [];
  const logger = createLogger({
    format: global.logFormat ?? loaded.config.logging.format,
    level: loaded.config.logging.level,
    now: deps.clock.now,
    write: (line) => {
      deps.stderr(line + "\n");
      if (logFile) logFile.write(line);
      else pending.push(line);
    },
  });
  // A rejection nobody handled must not end the WAF (docs/reliability.md).
  const unguard = guardUnhandledRejections(logger);
  // Listen for signals before anything starts, so a signal during start-up is not lost.
  const signalled = Promise.withResolvers<void>();
  const onSignal = () => signalled.resolve();
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  const stopWatch = watchLauncher({ ppid: Deno.ppid, readProc }, () => {
    logger.info("the command that started waf through deno task is gone: shutting down");
    signalled.resolve();
  });
  try {
    let server;
    const joinToken = stringFlag(flags, "join-token") ?? deps.env.clusterJoinToken;
    const refusal = await refused(loaded, joinToken, deps, t);
    if (refusal !== undefined) return refusal;
    const before = await snapshotDir(loaded.dataDir);
    if (loaded.missing) {
      await writeDefaultConfig(loaded.configPath);
      logger.info("created default configuration", { path: loaded.configPath });
    }
    try {
      logFile = openLogFile({ dir: `${loaded.dataDir}/logs` });
      for (const line of pending.splice(0)) logFile.write(line);
      server = await startServer({ config: loaded.config, dataDir: loaded.dataDir }, {
        clock: deps.clock,
        random: deps.random,
        logger,
        env: {
          ...deps.env,
          clusterJoinToken: joinToken,
        },
      });
    } catch (err) {
      if (err instanceof SetupTokenError) {
        // The message names the problem, never the value.
        deps.stderr(`${err.message}\n`);
        return EXIT_USAGE;
      }
      if (err instanceof ConfigProblemError) {
        deps.stderr(
          `${t("config.invalid", { path: loaded.configPath })}\n${formatProblems(err.problems)}\n`,
        );
        return EXIT_USAGE;
      }
      if (err instanceof ProductionStorageUnavailableError) {
        deps.stderr(productionReport(t, err.problems));
        return EXIT_FAILURE;
      }
      if (err instanceof DeploymentKeysError) {
        // Refused before any area started: what this start wrote goes again.
        logFile?.close();
        logFile = undefined;
        await removeCreated(before);
        const reason = t(`serve.deployment_keys_${err.problem}`);
        const detail = err.detail ? `\n  ${err.detail}` : "";
        deps.stderr(
          `${t("serve.deployment_keys", { file: err.file, reason })}${detail}\n${
            t("serve.start_undone", { dir: loaded.dataDir })
          }\n`,
        );
        return EXIT_FAILURE;
      }
      if (err instanceof SchemaTooNewError) {
        deps.stderr(`${t("store.schema_too_new", { found: err.found, known: err.known })}\n`);
        return EXIT_FAILURE;
      }
      if (err instanceof ListenerError) {
        // Taken since the check: what this start wrote goes again.
        logFile?.close();
        logFile = undefined;
        await removeCreated(before);
        deps.stderr(
          `${listenerFailed(t, err)}\n${t("serve.start_undone", { dir: loaded.dataDir })}\n`,
        );
        return EXIT_FAILURE;
      }
      throw err;
    }
    await signalled.promise;
    await server.shutdown();
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
    stopWatch();
    unguard();
    logFile?.close();
  }
  return EXIT_OK;
};
