/**
 * `waf store backup --out FILE` (a consistent online snapshot, integrity-checked, never
 * overwriting) and `waf store check` (the integrity check on the live store). Both open the
 * store file as it is, without migrating, so a backup taken before an upgrade keeps the old schema.
 * On `storage.profile: production` the backup is pg_dump's (the command prints its command line)
 * and the check reads the PostgreSQL store. `waf store migrate` moves a box onto production.
 */
import { openExisting } from "../db/maintenance.ts";
import type { SqliteDb as Db } from "../db/store.ts";
import { backupStore, checkDb } from "../mod/ops/backup.ts";
import type { Translate } from "./i18n/i18n.ts";
import { type Command, type CommandDeps, EXIT_FAILURE, EXIT_OK } from "./context.ts";
import { startOperator, storePath } from "./operator.ts";
import { stringFlag, usageError } from "./output.ts";
import { productionPg } from "../app/store.ts";
import { openPgStore, type PgDatabase } from "../db/pg/pg_database.ts";
import { checkPgTables } from "../mod/ops/pg_maintenance.ts";
import { copyStore, StoreCopyError, type TableCopy } from "../db/pg/store_copy.ts";
import { schemaVersion } from "../db/store.ts";
import { maskUrlPassword } from "../mod/core/redact.ts";
import type { Loaded } from "./load_config.ts";
import { b64url } from "../mod/core/digest.ts";

function existsSync(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
import { openOperatorStore, storeLocation } from "./operator_store.ts";

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
  if (productionPg(loaded.config)) return productionBackup(loaded, out, deps, t);
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
  if (productionPg(loaded.config)) return productionCheck(loaded, deps, t);
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

/** On `production`, `waf store backup` is pg_dump's job: the command line, password masked. */
function productionBackup(loaded: Loaded, out: string, deps: CommandDeps, t: Translate): number {
  const pg = productionPg(loaded.config)!;
  deps.stdout(
    `${t("store.backup_production", { where: storeLocation(loaded) })}\n` +
      `  pg_dump --format=custom --schema=${pg.schema} --file=${out} '${
        maskUrlPassword(pg.dsn)
      }'\n${t("store.backup_production_keys")}\n`,
  );
  return EXIT_FAILURE;
}

/** On `production`, `waf store check`: connect, schema version, every table read and counted. */
async function productionCheck(loaded: Loaded, deps: CommandDeps, t: Translate): Promise<number> {
  const db = openOperatorStore(loaded, deps, t, { create: false });
  if (!db) return EXIT_FAILURE;
  try {
    const check = await checkPgTables((text) => Promise.resolve(db.prepare(text).all()));
    const lines = check.tables.map(({ table, rows }) => `  ${table.padEnd(24)} ${rows}`);
    deps.stdout(
      `${
        t("store.check_production", { where: storeLocation(loaded), version: schemaVersion(db) })
      }\n${lines.join("\n")}\nok\n`,
    );
    return EXIT_OK;
  } catch (err) {
    deps.stderr(`${t("store.check_failed")}\n${(err as Error).message}\n`);
    return EXIT_FAILURE;
  } finally {
    db.close();
  }
}

/**
 * `waf store migrate --to-dsn DSN [--schema NAME] [--secrets-file PATH]`: copies this data
 * directory's `temporary` store into an empty PostgreSQL store and verifies it (db/pg/store_copy.ts).
 */
export const storeMigrateCommand: Command = async (args, global, deps) => {
  const words = ["store", "migrate"];
  const started = await startOperator(global, deps, {
    words,
    args,
    options: {
      "to-dsn": { type: "string" },
      schema: { type: "string" },
      "secrets-file": { type: "string" },
    },
  });
  if (typeof started === "number") return started;
  const { t, flags, loaded } = started;
  const dsn = stringFlag(flags, "to-dsn");
  if (!dsn) return usageError(deps, t, words, t("flags.required", { option: "--to-dsn" }));
  const schema = stringFlag(flags, "schema") ?? "public";
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    return usageError(deps, t, words, t("store.migrate_bad_schema", { schema }));
  }
  const secretsFile = stringFlag(flags, "secrets-file");
  if (secretsFile !== undefined && existsSync(secretsFile)) {
    deps.stderr(`${t("store.migrate_keys_exists", { path: secretsFile })}\n`);
    return EXIT_FAILURE;
  }
  const masked = maskUrlPassword(dsn);
  const scrub = (text: string) => text.replaceAll(dsn, masked);
  const source = openLive(loaded.dataDir, deps, t);
  if (!source) return EXIT_FAILURE;
  try {
    let target: PgDatabase;
    try {
      target = openPgStore({
        dsn,
        schema,
        connectTimeoutMs: 5_000,
        statementTimeoutMs: 60_000,
        controllerId: `cli-migrate-${Deno.pid}`,
        now: deps.clock.now(),
      });
    } catch (err) {
      deps.stderr(
        `${t("store.open_failed", { path: masked, error: scrub((err as Error).message) })}\n`,
      );
      return EXIT_FAILURE;
    }
    let copies: TableCopy[];
    try {
      copies = copyStore(source, target);
    } catch (err) {
      if (err instanceof StoreCopyError && err.kind === "not_empty") {
        deps.stderr(`${t("store.migrate_not_empty", { table: err.table!, where: masked })}\n`);
      } else if (err instanceof StoreCopyError && err.kind === "source_version") {
        deps.stderr(`${t("store.migrate_source_version", err.detail)}\n`);
      } else {
        deps.stderr(
          `${t("store.migrate_failed", { error: scrub((err as Error).message) })}\n`,
        );
      }
      return EXIT_FAILURE;
    } finally {
      target.close();
    }
    const rows = copies.map((c) =>
      `  ${c.table.padEnd(24)} ${String(c.sourceRows).padStart(8)} ${
        String(c.targetRows).padStart(8)
      }  ${c.targetChecksum}  verified`
    );
    deps.stdout(
      `${t("store.migrate_done", { where: `${masked} (schema ${schema})` })}\n` +
        `  ${"table".padEnd(24)} ${"sqlite".padStart(8)} ${"postgres".padStart(8)}  checksum\n` +
        `${rows.join("\n")}\n`,
    );
    const keys = writeSecretsFile(loaded.dataDir, secretsFile, deps, t);
    if (keys === undefined) return EXIT_FAILURE;
    deps.stdout(
      `\n${t("store.migrate_config")}\n` +
        `  storage.profile: production\n` +
        `  storage.production.postgresql.dsn: "${masked}"\n` +
        (schema === "public" ? "" : `  storage.production.postgresql.schema: ${schema}\n`) +
        `  storage.production.secrets_file: ${keys}\n` +
        `${t("store.migrate_next")}\n`,
    );
    return EXIT_OK;
  } finally {
    source.close();
  }
};

/**
 * The deployment key file (`storage.production.secrets_file`) made from this box's `totp.key`
 * (sealing) and `auth.key` (signing), in the format the production profile reads (`version: 1`,
 * then `sealing:` and `signing:` as base64url), mode 0600, never over an existing file. Without
 * `--secrets-file` nothing is written and the path to use is a placeholder.
 */
function writeSecretsFile(
  dataDir: string,
  file: string | undefined,
  deps: CommandDeps,
  t: Translate,
): string | undefined {
  if (file === undefined) {
    deps.stdout(`${t("store.migrate_keys_hint", { dir: dataDir })}\n`);
    return "/etc/waf/deployment.key";
  }
  const read = (name: string) => {
    try {
      return Deno.readTextFileSync(`${dataDir}/${name}`).trim();
    } catch {
      return undefined;
    }
  };
  // A key file is created on its first use, so a missing one sealed or signed nothing: a fresh
  // key serves as well.
  const fresh = () => b64url(deps.random.bytes(32));
  const sealing = read("totp.key") ?? fresh();
  const signing = read("auth.key") ?? fresh();
  try {
    Deno.writeTextFileSync(
      file,
      `# waf deployment key file (storage.production.secrets_file)\n# The same file on every controller of the deployment, mode 0600. Never store it in the\n# database; back it up apart from the database. Without it, nothing the deployment sealed opens.\nversion: 1\nsealing: ${sealing}\nsigning: ${signing}\n`,
      { createNew: true, mode: 0o600 },
    );
  } catch (err) {
    deps.stderr(`${t("store.migrate_keys_failed", { path: file, error: String(err) })}\n`);
    return undefined;
  }
  deps.stdout(`${t("store.migrate_keys_written", { path: file })}\n`);
  return file;
}
