/**
 * `waf store backup --out FILE` (a consistent online snapshot, integrity-checked, never
 * overwriting) and `waf store check` (the integrity check on the live store). Both open the
 * store file as it is, without migrating, so a backup taken before an upgrade keeps the old schema.
 */
import { openExisting } from "../db/maintenance.ts";
import type { SqliteDb as Db } from "../db/store.ts";
import { backupStore, checkDb } from "../mod/ops/backup.ts";
import type { Translate } from "./i18n/i18n.ts";
import { type Command, type CommandDeps, EXIT_FAILURE, EXIT_OK } from "./context.ts";
import { startOperator, storePath } from "./operator.ts";
import { stringFlag, usageError } from "./output.ts";

function openLive(dataDir: string, deps: CommandDeps, t: Translate): Db | undefined {
  const path = storePath(dataDir);
  try {
    return openExisting(path, { readOnly: true });
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      deps.stderr(`${t("store.missing", { path })}\n`);
      return undefined;
    }
    deps.stderr(`${t("store.open_failed", { path, error: String(err) })}\n`);
    return undefined;
  }
}

export const storeBackupCommand: Command = async (args, global, deps) => {
  const words = ["store", "backup"];
  const started = await startOperator(global, deps, {
    words,
    args,
    options: { out: { type: "string" } },
  });
  if (typeof started === "number") return started;
  const { t, flags, loaded } = started;
  const out = stringFlag(flags, "out");
  if (!out) return usageError(deps, t, words, t("flags.required", { option: "--out" }));
  const db = openLive(loaded.dataDir, deps, t);
  if (!db) return EXIT_FAILURE;
  try {
    const result = backupStore(db, out, deps);
    if (result.kind === "exists") {
      deps.stderr(`${t("store.backup_exists", { path: out })}\n`);
      return EXIT_FAILURE;
    }
    if (result.kind === "no_folder" || result.kind === "not_a_folder") {
      const id = result.kind === "no_folder"
        ? "store.backup_no_folder"
        : "store.backup_not_a_folder";
      deps.stderr(`${t(id, { folder: result.folder, path: out })}\n`);
      return EXIT_FAILURE;
    }
    if (result.kind === "corrupt") {
      deps.stderr(`${t("store.backup_corrupt")}\n${result.problems.join("\n")}\n`);
      return EXIT_FAILURE;
    }
    deps.stdout(
      `${
        t("store.backup_done", {
          path: result.path,
          bytes: result.bytes,
          version: result.schemaVersion,
        })
      }\nok\n`,
    );
    return EXIT_OK;
  } catch (err) {
    deps.stderr(`${t("store.backup_failed", { error: String(err) })}\n`);
    return EXIT_FAILURE;
  } finally {
    db.close();
  }
};

export const storeCheckCommand: Command = async (args, global, deps) => {
  const started = await startOperator(global, deps, { words: ["store", "check"], args });
  if (typeof started === "number") return started;
  const { t, loaded } = started;
  const db = openLive(loaded.dataDir, deps, t);
  if (!db) return EXIT_FAILURE;
  try {
    const result = checkDb(db);
    if (result.kind === "corrupt") {
      deps.stderr(`${t("store.check_failed")}\n${result.problems.join("\n")}\n`);
      return EXIT_FAILURE;
    }
    deps.stdout(
      `${
        t("store.check_done", { path: storePath(loaded.dataDir), version: result.schemaVersion })
      }\nok\n`,
    );
    return EXIT_OK;
  } finally {
    db.close();
  }
};
