/**
 * Strict parsing of a command's own flags with `node:util` `parseArgs`. Problems come back as
 * data (`{ code, option }`), read from parseArgs' tokens rather than from its English error
 * text, so the command line words them in the selected language at the edge.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Why a command line was refused. */
export type FlagProblem =
  | { readonly code: "unknown_option"; readonly option: string }
  | { readonly code: "missing_value"; readonly option: string }
  | { readonly code: "no_value"; readonly option: string }
  | { readonly code: "unexpected_argument"; readonly argument: string }
  | { readonly code: "missing_argument" };

export type FlagsResult =
  | {
    kind: "ok";
    values: Record<string, string | boolean | undefined>;
    positionals: string[];
  }
  | { kind: "error"; problem: FlagProblem };

/** The first problem among parseArgs' tokens, judged as strict mode would. */
function tokenProblem(
  tokens: NonNullable<ReturnType<typeof parseArgs>["tokens"]>,
  options: Options,
): FlagProblem | undefined {
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const option = token.rawName;
    const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (!spec) return { code: "unknown_option", option };
    if (spec.type === "string") {
      // A value that looks like an option is ambiguous: `--name=-x` is how to pass it.
      if (token.value === undefined || (!token.inlineValue && token.value.startsWith("-"))) {
        return { code: "missing_value", option };
      }
    } else if (token.value !== undefined) {
      return { code: "no_value", option };
    }
  }
  return undefined;
}

/** Parses `args`; unknown flags and unexpected positionals are usage errors. */
export function parseFlags(
  args: readonly string[],
  options: Options,
  positionals: { min: number; max: number } = { min: 0, max: 0 },
): FlagsResult {
  const parsed = parseArgs({
    args: [...args],
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const problem = tokenProblem(parsed.tokens, options);
  if (problem) return { kind: "error", problem };
  const pos = parsed.positionals;
  if (pos.length < positionals.min) {
    return { kind: "error", problem: { code: "missing_argument" } };
  }
  if (pos.length > positionals.max) {
    return {
      kind: "error",
      problem: { code: "unexpected_argument", argument: pos[positionals.max]! },
    };
  }
  return {
    kind: "ok",
    values: parsed.values as Record<string, string | boolean | undefined>,
    positionals: pos,
  };
}
