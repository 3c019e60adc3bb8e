/**
 * Shared plumbing of the operator commands: usage errors (exit 2) worded in the selected
 * language from the flag parser's problems (data, never its English text), and flag parsing
 * around it.
 */
import type { Translate } from "./i18n/i18n.ts";
import { type FlagProblem, type FlagsResult, parseFlags } from "./args.ts";
import { type CommandDeps, EXIT_USAGE } from "./context.ts";

type FlagOptions = Parameters<typeof parseFlags>[1];

/** A flag problem in the selected language. */
export function flagProblemText(t: Translate, problem: FlagProblem): string {
  switch (problem.code) {
    case "unknown_option":
      return t("flags.unknown_option", { option: problem.option });
    case "missing_value":
      return t("flags.missing_value", { option: problem.option });
    case "no_value":
      return t("flags.no_value", { option: problem.option });
    case "unexpected_argument":
      return t("flags.unexpected_argument", { argument: problem.argument });
    case "missing_argument":
      return t("flags.missing_argument");
  }
}

/** Prints a usage error for `waf <words>` and returns exit code 2. */
export function usageError(
  deps: CommandDeps,
  t: Translate,
  words: readonly string[],
  message: string,
): number {
  const command = words.join(" ");
  deps.stderr(`waf ${command}: ${message}\n${t("cli.see_command_help", { command })}\n`);
  return EXIT_USAGE;
}

export type Flags = Extract<FlagsResult, { kind: "ok" }>;

/** The command being run, as its usage errors name it: deps, language and words (`["user", "add"]`). */
export interface Invocation {
  readonly deps: CommandDeps;
  readonly t: Translate;
  readonly words: readonly string[];
}

/** Parses a command's flags; on error prints the translated usage error and returns a number. */
export function flagsOrUsage(
  invocation: Invocation,
  args: readonly string[],
  options: FlagOptions,
  positionals: { min: number; max: number } = { min: 0, max: 0 },
): Flags | number {
  const parsed = parseFlags(args, options, positionals);
  if (parsed.kind === "error") {
    const { deps, t, words } = invocation;
    return usageError(deps, t, words, flagProblemText(t, parsed.problem));
  }
  return parsed;
}

/** A string flag's value, or undefined. */
export function stringFlag(flags: Flags, name: string): string | undefined {
  const v = flags.values[name];
  return typeof v === "string" ? v : undefined;
}

/** A boolean flag's value. */
export function boolFlag(flags: Flags, name: string): boolean {
  return flags.values[name] === true;
}
