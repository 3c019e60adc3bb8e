/** Strict parsing of a command's own flags with `node:util` `parseArgs`. */
import { parseArgs, type ParseArgsConfig } from "node:util";

type Options = NonNullable<ParseArgsConfig["options"]>;

export type FlagsResult =
  | {
    kind: "ok";
    values: Record<string, string | boolean | undefined>;
    positionals: string[];
  }
  | { kind: "error"; message: string };

/** Parses `args`; unknown flags and unexpected positionals are usage errors. */
export function parseFlags(
  args: readonly string[],
  options: Options,
  positionals: { min: number; max: number } = { min: 0, max: 0 },
): FlagsResult {
  try {
    const parsed = parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
    const pos = parsed.positionals;
    if (pos.length < positionals.min) {
      return { kind: "error", message: "Missing argument" };
    }
    if (pos.length > positionals.max) {
      return { kind: "error", message: `Unexpected argument: "${pos[positionals.max]}"` };
    }
    return {
      kind: "ok",
      values: parsed.values as Record<string, string | boolean | undefined>,
      positionals: pos,
    };
  } catch (err) {
    return {
      kind: "error",
      message: err instanceof Error ? err.message.split(". ")[0]! : String(err),
    };
  }
}
