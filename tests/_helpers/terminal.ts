/**
 * Runs a module's text with `deno run <flags>` under a terminal (util-linux's `script`): a
 * terminal is what makes Deno ask for a missing permission (Allow? [y/n/A]) instead of denying
 * it, so a test can tell a module that queries a permission from one that triggers the prompt.
 */
export async function runUnderTerminal(code: string, flags: readonly string[]): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "waf-tty-" });
  try {
    const probe = `${dir}/probe.ts`;
    await Deno.writeTextFile(probe, code);
    const run = [Deno.execPath(), "run", ...flags, probe];
    const child = new Deno.Command("script", {
      args: ["-qec", run.join(" "), "/dev/null"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // A prompt waits for an answer for ever: the process is killed instead.
    const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await child.stdin.close();
    const out = await child.output();
    clearTimeout(killer);
    return new TextDecoder().decode(out.stdout);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
