/**
 * Resolves the config path and data directory and loads the configuration the way every
 * command needs it: missing file → defaults (written by `serve` only, once its listeners can
 * open), invalid → exit 2.
 */
import {
  type Config,
  defaultConfig,
  formatProblems,
  readConfigFile,
} from "../mod/config/config.ts";
import type { Translate } from "./i18n/i18n.ts";
import type { CommandDeps, GlobalOptions } from "./context.ts";

export const DEFAULT_DATA_DIR = "./data";

export interface Loaded {
  readonly config: Config;
  readonly configPath: string;
  readonly dataDir: string;
  /** No file at `configPath`: `config` holds the defaults, and nothing was written. */
  readonly missing: boolean;
}

/** The config path: `--config`, else `<data-dir>/waf.yaml`. */
export function configPathOf(global: GlobalOptions): string {
  return global.configPath ?? `${global.dataDir ?? DEFAULT_DATA_DIR}/waf.yaml`;
}

/**
 * Loads the configuration, the documented defaults when the file is absent (`missing`).
 * Returns undefined after printing the problems (the caller exits 2) in the language of `t`.
 */
export async function loadConfig(
  global: GlobalOptions,
  deps: CommandDeps,
  t?: Translate,
): Promise<Loaded | undefined> {
  const configPath = configPathOf(global);
  const read = await readConfigFile(configPath);
  const missing = read === undefined;
  const result = read ?? { kind: "ok", config: defaultConfig() };
  if (result.kind === "invalid") {
    const head = t
      ? t("config.invalid", { path: configPath })
      : `Invalid configuration in "${configPath}":`;
    deps.stderr(`${head}\n${formatProblems(result.problems)}\n`);
    return undefined;
  }
  const dataDir = global.dataDir ?? result.config.data_dir ?? DEFAULT_DATA_DIR;
  return { config: result.config, configPath, dataDir, missing };
}
