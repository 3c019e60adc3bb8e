/** Runs the CLI in-process with captured output. */
import "./fast_hash.ts";
import { runCli } from "../../cli.ts";
import type { CommandDeps } from "../../cli/context.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { systemRandom } from "../../mod/core/random.ts";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function cli(
  argv: readonly string[],
  overrides: Partial<CommandDeps> & { stdin?: string } = {},
): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const deps: CommandDeps = {
    clock: new FakeClock(Date.now()),
    random: systemRandom,
    env: {},
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    readStdin: () => Promise.resolve(overrides.stdin ?? ""),
    ...overrides,
  };
  const code = await runCli(argv, deps);
  return { code, stdout, stderr };
}
