/**
 * How every operator command starts: select the language, parse the command's flags strictly,
 * load the configuration (never writing it), and report problems with the right exit code.
 */
import type { Translate } from "./i18n/i18n.ts";
import type { parseFlags } from "./args.ts";
import type { CommandDeps, GlobalOptions } from "./context.ts";
import { EXIT_USAGE } from "./context.ts";
import { cliTranslator } from "./lang.ts";
import { loadConfig, type Loaded } from "./load_config.ts";
import { type Flags, flagsOrUsage } from "./output.ts";

export interface Started {
  readonly t: Translate;
  readonly flags: Flags;
  readonly loaded: Loaded;
}

/** What an operator command accepts: its words, its arguments, its flags and positionals. */
export interface OperatorCommand {
  readonly words: readonly string[];
  readonly args: readonly string[];
  readonly options?: Parameters<typeof parseFlags>[1];
  readonly positionals?: { min: number; max: number };
}

/** Parses flags and loads the configuration; a number is the exit code to return at once. */
export async function startOperator(
  global: GlobalOptions,
  deps: CommandDeps,
  command: OperatorCommand,
): Promise<Started | number> {
  const { words, args, options = {}, positionals = { min: 0, max: 0 } } = command;
  const { t } = await cliTranslator(global, deps);
  const flags = flagsOrUsage({ deps, t, words }, args, options, positionals);
  if (typeof flags === "number") return flags;
  const loaded = await loadConfig(global, deps, t);
  if (!loaded) return EXIT_USAGE;
  return { t, flags, loaded };
}

/** The store file of a data directory. */
export function storePath(dataDir: string): string {
  return `${dataDir}/waf.db`;
}
