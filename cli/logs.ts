/** `waf logs pack --dir DIR [--name FILE.zip]`: writes the support archive (see logs_pack.ts). */
import { openExisting } from "../db/maintenance.ts";
import type { Db } from "../db/store.ts";
import { accessLogPath, productionPg } from "../app/store.ts";
import { openOperatorStore } from "./operator_store.ts";
import { defaultArchiveName, hostFacts, packSupportArchive } from "../mod/ops/logs_pack.ts";
import { VERSION } from "../mod/core/version.ts";
import { type Command, EXIT_FAILURE, EXIT_OK } from "./context.ts";
import { startOperator, storePath } from "./operator.ts";
import { stringFlag, usageError } from "./output.ts";

const PLAIN_ZIP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*\.zip$/;

export const logsPackCommand: Command = async (args, global, deps) => {
  const words = ["logs", "pack"];
  const started = await startOperator(global, deps, {
    words,
    args,
    options: { dir: { type: "string" }, name: { type: "string" } },
  });
  if (typeof started === "number") return started;
  const { t, flags, loaded } = started;
  const dir = stringFlag(flags, "dir");
  if (!dir) return usageError(deps, t, words, t("flags.required", { option: "--dir" }));
  const now = deps.clock.now();
  const name = stringFlag(flags, "name") ?? defaultArchiveName(now);
  if (!PLAIN_ZIP_NAME.test(name)) {
    return usageError(deps, t, words, t("logs.bad_name", { name }));
  }
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  let db: Db | undefined;
  let logDb: Db | undefined;
  const openLocal = (path: string) => {
    try {
      return openExisting(path, { readOnly: true });
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) {
        deps.stderr(`${t("logs.store_skipped", { error: String(err) })}\n`);
      }
      return undefined;
    }
  };
  if (productionPg(loaded.config)) {
    // The audit from the deployment's database (its failure is said, and the pack goes on),
    // this controller's access records from its own file.
    db = openOperatorStore(loaded, deps, t, { create: false });
    logDb = openLocal(accessLogPath(loaded.config, loaded.dataDir));
  } else {
    db = logDb = openLocal(storePath(loaded.dataDir));
  }
  try {
    const result = await packSupportArchive({
      dataDir: loaded.dataDir,
      configPath: loaded.configPath,
      config: loaded.config,
      db,
      logDb,
      version: VERSION,
      host: hostFacts(),
      knownSecrets: [deps.env.setupToken, deps.env.clusterJoinToken].filter((v) => v !== undefined),
      now,
    }, `${dir}/${name}`);
    if (result.kind === "exists") {
      deps.stderr(`${t("logs.exists", { path: result.path })}\n`);
      return EXIT_FAILURE;
    }
    deps.stdout(`${t("logs.done", { path: result.path, bytes: result.bytes })}\n`);
    for (const file of result.files) deps.stdout(`  ${file.path} (${file.bytes})\n`);
    return EXIT_OK;
  } catch (err) {
    deps.stderr(`${t("logs.failed", { error: String(err) })}\n`);
    return EXIT_FAILURE;
  } finally {
    db?.close();
    if (logDb !== db) logDb?.close();
  }
};
