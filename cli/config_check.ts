/** `waf config check`: validates the config file and prints each problem with its key path. */
import { formatProblems, readConfigFile } from "../mod/config.ts";
import { parseFlags } from "./args.ts";
import { type Command, EXIT_OK, EXIT_USAGE } from "./context.ts";
import { configPathOf } from "./load_config.ts";

export const configCheckCommand: Command = async (args, global, deps) => {
  const flags = parseFlags(args, {});
  if (flags.kind === "error") {
    deps.stderr(`waf config check: ${flags.message}
Run "waf help config check" for usage.
`);
    return EXIT_USAGE;
  }
  const path = configPathOf(global);
  const result = await readConfigFile(path);
  if (result === undefined) {
    deps.stderr(`Configuration file not found: "${path}"\n`);
    return EXIT_USAGE;
  }
  if (result.kind === "invalid") {
    deps.stderr(`Invalid configuration in "${path}":\n${formatProblems(result.problems)}\n`);
    return EXIT_USAGE;
  }
  deps.stdout(`Configuration "${path}" is valid\n`);
  return EXIT_OK;
};
