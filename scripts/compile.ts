/**
 * `deno task compile`: builds the single `waf` executable with `deno compile`.
 *
 * `deno compile` needs Deno's `denort` base binary. It honours `DENORT_BIN` (a local denort of
 * the same Deno version); otherwise it uses one already in Deno's cache. When neither exists
 * it says so plainly and exits non-zero instead of trying a download that cannot succeed here.
 */
import { COMPILE_INCLUDES } from "./compile_includes.ts";
import { SERVER_DENO_FLAGS, SERVER_V8_FLAGS } from "./server_flags.ts";
const root = new URL("..", import.meta.url).pathname;
const output = Deno.args[0] ?? `${root}waf`;
const version = Deno.version.deno;

function cachedDenort(): string | undefined {
  const home = Deno.env.get("HOME") ?? "";
  const dirs = [Deno.env.get("DENO_DIR"), `${home}/.cache/deno`].filter((d): d is string => !!d);
  for (const dir of dirs) {
    const dl = `${dir}/dl/release/v${version}`;
    try {
      for (const entry of Deno.readDirSync(dl)) {
        if (entry.name.startsWith("denort-")) return `${dl}/${entry.name}`;
      }
    } catch { /* not cached */ }
  }
  return undefined;
}

const denortBin = Deno.env.get("DENORT_BIN");
if (denortBin) {
  try {
    Deno.statSync(denortBin);
  } catch {
    console.error(`DENORT_BIN points to "${denortBin}", which does not exist`);
    Deno.exit(1);
  }
} else if (!cachedDenort()) {
  console.error(
    `Cannot compile: deno compile needs the denort ${version} base binary, and none is available.\n` +
      `Set DENORT_BIN to a local denort ${version} binary (it cannot be downloaded on this machine).\n` +
      `Everything else runs from source: "deno task start" and "deno run -A main.ts <args>" behave exactly like "waf <args>".`,
  );
  Deno.exit(1);
}

// Worker modules are loaded by URL at run time, so the compiler must be told to embed them; a
// listed path that does not exist is a mistake in the list, not something to skip.
const missing = COMPILE_INCLUDES.filter((p) => {
  try {
    Deno.statSync(`${root}${p}`);
    return false;
  } catch {
    return true;
  }
});
if (missing.length > 0) {
  console.error(`scripts/compile_includes.ts lists paths that do not exist: ${missing.join(", ")}`);
  Deno.exit(1);
}
const includes = COMPILE_INCLUDES.flatMap((p) => ["--include", `${root}${p}`]);
const cmd = new Deno.Command(Deno.execPath(), {
  // The server's V8 flags (scripts/server_flags.ts: young generation, pretenuring, heap growth;
  // see docs/data-plane.md, "Memory and V8 flags"); the flags are embedded.
  args: [
    "compile",
    "-A",
    // Data-plane workers share the listeners with `reusePort` (server.data.workers).
    "--unstable-net",
    SERVER_V8_FLAGS,
    ...SERVER_DENO_FLAGS,
    "--output",
    output,
    ...includes,
    `${root}main.ts`,
  ],
  stdout: "inherit",
  stderr: "inherit",
});
const { code } = await cmd.output();
if (code === 0) console.log(`Built ${output}`);
Deno.exit(code);
