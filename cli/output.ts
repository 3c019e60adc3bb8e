/**
 * Shared plumbing of the operator commands: usage errors (exit 2) with parseArgs' English
 * details translated into the selected language, and flag parsing around it.
 */
import type { MessageId, Translate } from "./i18n/i18n.ts";
import { type FlagsResult, parseFlags } from "./args.ts";
import { type CommandDeps, EXIT_USAGE } from "./context.ts";

type FlagOptions = Parameters<typeof parseFlags>[1];

const FLAG_ERRORS: readonly { re: RegExp; id: MessageId }[] = [
  { re: /^Unknown option '([^']+)'/, id: "flags.unknown_option" },
  { re: /^Option '([^' ]+)(?: <value>)?' argument missing/, id: "flags.missing_value" },
  { re: /^Option '([^']+)' argument is ambiguous/, id: "flags.missing_value" },
  { re: /^Option '([^']+)' does not take an argument/, id: "flags.no_value" },
  { re: /^Unexpected argument:? ["']([^"']*)["']/, id: "flags.unexpected_argument" },
  { re: /^Missing argument()/, id: "flags.missing_argument" },
];

/** parseArgs' English error, in the selected language (unknown shapes pass through). */
export function translateFlagError(t: Translate, message: string): string {
  for (const { re, id } of FLAG_ERRORS) {
    const m = re.exec(message);
    if (m) return t(id, { option: m[1] ?? "", argument: m[1] ?? "" });
  }
  return message;
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

/** Parses a command's flags; on error prints the translated usage error and returns a number. */
export function flagsOrUsage(
  deps: CommandDeps,
  t: Translate,
  words: readonly string[],
  args: readonly string[],
  options: FlagOptions,
  positionals: { min: number; max: number } = { min: 0, max: 0 },
): Flags | number {
  const parsed = parseFlags(args, options, positionals);
  if (parsed.kind === "error") {
    return usageError(deps, t, words, translateFlagError(t, parsed.message));
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
