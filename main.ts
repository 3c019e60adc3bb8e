/**
 * Composition root: the only place that reads `Deno.args` and `Deno.env` and builds the real
 * clock, random source and output streams.
 */
import { runCli } from "./cli.ts";
import type { CommandDeps } from "./cli/context.ts";
import { systemClock } from "./mod/core/clock.ts";
import { systemRandom } from "./mod/core/random.ts";
import { streamWriter } from "./cli/stdio.ts";

export function realDeps(): CommandDeps {
  return {
    clock: systemClock,
    random: systemRandom,
    env: {
      setupToken: Deno.env.get("WAF_SETUP_TOKEN"),
      clusterJoinToken: Deno.env.get("WAF_CLUSTER_JOIN_TOKEN"),
      osUser: Deno.env.get("SUDO_USER") ?? Deno.env.get("USER") ?? Deno.env.get("LOGNAME"),
      lang: Deno.env.get("WAF_LANG"),
    },
    stdout: streamWriter(Deno.stdout),
    stderr: streamWriter(Deno.stderr),
    readStdin: async () => await new Response(Deno.stdin.readable).text(),
  };
}

if (import.meta.main) {
  const code = await runCli(Deno.args, realDeps());
  Deno.exit(code);
}
