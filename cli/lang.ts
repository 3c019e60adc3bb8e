/**
 * The CLI language: `waf lang show` / `waf lang set <en|zh-CN>`. The choice persists in
 * `<data-dir>/cli.json`; `WAF_LANG` (read in main.ts) overrides it for one invocation.
 */
import { readConfigFile } from "../mod/config/config.ts";
import {
  DEFAULT_LANG,
  type Lang,
  LANGUAGES,
  parseLang,
  type Translate,
  translator,
} from "./i18n/i18n.ts";
import { type Command, type CommandDeps, EXIT_OK, type GlobalOptions } from "./context.ts";
import { configPathOf, DEFAULT_DATA_DIR } from "./load_config.ts";
import { flagsOrUsage, usageError } from "./output.ts";

export const CLI_SETTINGS_FILE = "cli.json";

/**
 * The data directory without reporting configuration problems: language selection must work
 * even when the configuration is broken, so that the command can report it.
 */
export async function quietDataDir(global: GlobalOptions): Promise<string> {
  if (global.dataDir) return global.dataDir;
  try {
    const result = await readConfigFile(configPathOf(global));
    if (result?.kind === "ok" && result.config.data_dir) return result.config.data_dir;
  } catch { /* unreadable configuration: the command itself reports it */ }
  return DEFAULT_DATA_DIR;
}

async function readSettings(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return {};
    throw err;
  }
  try {
    const data: unknown = JSON.parse(text);
    return data && typeof data === "object" && !Array.isArray(data)
      ? data as Record<string, unknown>
      : {};
  } catch {
    return {};
  }
}

export type LangSource = "env" | "file" | "default";

export interface Selection {
  readonly t: Translate;
  readonly lang: Lang;
  readonly source: LangSource;
  readonly settingsPath: string;
  /** Values that were present but unsupported, so `lang show` can say they were ignored. */
  readonly ignored: { readonly env?: string; readonly file?: string };
}

/** Selects the language: `WAF_LANG`, else `<data-dir>/cli.json`, else English. */
export async function cliTranslator(global: GlobalOptions, deps: CommandDeps): Promise<Selection> {
  const settingsPath = `${await quietDataDir(global)}/${CLI_SETTINGS_FILE}`;
  const ignored: { env?: string; file?: string } = {};
  const fromEnv = deps.env.lang ? parseLang(deps.env.lang) : undefined;
  if (deps.env.lang && !fromEnv) ignored.env = deps.env.lang;
  let stored: string | undefined;
  try {
    const value = (await readSettings(settingsPath))["lang"];
    if (typeof value === "string") stored = value;
  } catch { /* an unreadable settings file means the default language */ }
  const fromFile = stored === undefined ? undefined : parseLang(stored);
  if (stored !== undefined && !fromFile) ignored.file = stored;
  const lang = fromEnv ?? fromFile ?? DEFAULT_LANG;
  const source: LangSource = fromEnv ? "env" : fromFile ? "file" : "default";
  return { t: translator(lang), lang, source, settingsPath, ignored };
}

/** Replaces `path` atomically (temporary file, fsync, rename), mode 0600. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o600 });
  try {
    await file.write(new TextEncoder().encode(text));
    await file.sync();
  } finally {
    file.close();
  }
  await Deno.rename(tmp, path);
}

const SUPPORTED = LANGUAGES.join(", ");

export const langShowCommand: Command = async (args, global, deps) => {
  const selection = await cliTranslator(global, deps);
  const { t } = selection;
  const flags = flagsOrUsage({ deps, t, words: ["lang", "show"] }, args, {});
  if (typeof flags === "number") return flags;
  const source = selection.source === "env"
    ? t("lang.source_env")
    : selection.source === "file"
    ? t("lang.source_file", { path: selection.settingsPath })
    : t("lang.source_default");
  deps.stdout(`${t("lang.current", { lang: selection.lang, source })}\n`);
  deps.stdout(`${t("lang.supported", { list: SUPPORTED })}\n`);
  if (selection.ignored.env) {
    deps.stdout(`${t("lang.ignored_env", { value: selection.ignored.env })}\n`);
  }
  if (selection.ignored.file) {
    deps.stdout(
      `${
        t("lang.ignored_file", { value: selection.ignored.file, path: selection.settingsPath })
      }\n`,
    );
  }
  return EXIT_OK;
};

export const langSetCommand: Command = async (args, global, deps) => {
  const selection = await cliTranslator(global, deps);
  const { t } = selection;
  const words = ["lang", "set"];
  const flags = flagsOrUsage({ deps, t, words }, args, {}, { min: 1, max: 1 });
  if (typeof flags === "number") return flags;
  const wanted = flags.positionals[0]!;
  const lang = parseLang(wanted);
  if (!lang) {
    return usageError(deps, t, words, t("lang.unknown", { value: wanted, list: SUPPORTED }));
  }
  const dir = selection.settingsPath.slice(0, selection.settingsPath.lastIndexOf("/"));
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const settings = await readSettings(selection.settingsPath).catch(() => ({}));
  await writeAtomically(
    selection.settingsPath,
    JSON.stringify({ ...settings, lang }, null, 2) + "\n",
  );
  const next = translator(lang);
  deps.stdout(`${next("lang.set_done", { lang, path: selection.settingsPath })}\n`);
  if (selection.source === "env" && selection.lang !== lang) {
    deps.stdout(`${next("lang.env_overrides", { lang: selection.lang })}\n`);
  }
  return EXIT_OK;
};
