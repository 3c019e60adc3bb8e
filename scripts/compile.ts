/**
 * `deno task compile`: builds the single `waf` executable and says which kind it built.
 *
 * ```sh
 * deno task compile [OUTPUT] [--kind auto|deno-compile|self-contained]
 *                   [--compression gzip|xz|zstd] [--level N] [--runtime DENO]
 * ```
 *
 * With a `denort` of this Deno version (`DENORT_BIN`, or one in Deno's cache) it runs
 * `deno compile`; without one (it is downloaded from Deno's servers, which this machine cannot
 * reach) it builds the self-contained executable of scripts/self_contained.ts. Both embed the
 * program of scripts/program_files.ts and the shipped flags of scripts/server_flags.ts.
 */
import { parseArgs } from "node:util";
import { manifest, programGraph, ROOT, stageProgram } from "./program_files.ts";
import { buildSelfContained } from "./self_contained.ts";
import { type Compression, COMPRESSIONS } from "./self_contained_pack.ts";
import { COMPILE_INCLUDES } from "./compile_includes.ts";
import { SERVER_DENO_FLAGS, SERVER_V8_FLAGS } from "./server_flags.ts";

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

/** The denort to compile with, or why there is none. */
function findDenort(): { path: string } | { missing: string } {
  const bin = Deno.env.get("DENORT_BIN");
  if (bin) {
    try {
      Deno.statSync(bin);
      return { path: bin };
    } catch {
      return { missing: `DENORT_BIN points to "${bin}", which does not exist` };
    }
  }
  const cached = cachedDenort();
  return cached
    ? { path: cached }
    : { missing: `no denort ${version} (DENORT_BIN or Deno's cache)` };
}

/**
 * `deno compile` over a staged copy of the program, so the build record (`build.json`) and the
 * reduced import map go in without touching the working tree.
 */
async function denoCompile(output: string, denort: string): Promise<number> {
  const stage = await Deno.makeTempDir({ prefix: "waf-compile-" });
  try {
    await stageProgram(await programGraph(), stage);
    await Deno.mkdir(`${stage}/bin`);
    await Deno.copyFile(denort, `${stage}/bin/denort`);
    const { hash } = await manifest(stage, ["bin", "src"]);
    const src = `${stage}/src`;
    await Deno.writeTextFile(
      `${src}/build.json`,
      JSON.stringify({ kind: "deno compile", content_hash: hash }) + "\n",
    );
    const includes = [...COMPILE_INCLUDES, "build.json"].flatMap((
      p,
    ) => ["--include", `${src}/${p}`]);
    const { code } = await new Deno.Command(Deno.execPath(), {
      args: [
        "compile",
        "-A",
        "--config",
        `${src}/deno.json`,
        // Data-plane workers share the listeners with `reusePort` (server.data.workers).
        "--unstable-net",
        SERVER_V8_FLAGS,
        ...SERVER_DENO_FLAGS,
        "--output",
        output,
        ...includes,
        `${src}/main.ts`,
      ],
      env: { DENORT_BIN: denort },
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (code !== 0) return code;
    // A full deno binary given as DENORT_BIN builds a file that runs as the Deno CLI instead.
    const probe = await new Deno.Command(output, { args: ["--version"], stdout: "piped" }).output();
    const first = new TextDecoder().decode(probe.stdout).split("\n")[0] ?? "";
    if (!first.startsWith("waf ")) {
      console.error(`${denort} is not a denort: the built ${output} answers "${first}"`);
      await Deno.remove(output);
      return 1;
    }
    console.log(`Built ${output} (deno compile, content ${hash})`);
    return 0;
  } finally {
    await Deno.remove(stage, { recursive: true });
  }
}

export async function main(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      kind: { type: "string", default: "auto" },
      compression: { type: "string", default: "gzip" },
      level: { type: "string", default: "6" },
      runtime: { type: "string" },
    },
  });
  const output = positionals[0] ?? `${ROOT}waf`;
  const kind = values.kind;
  if (!["auto", "deno-compile", "self-contained"].includes(kind)) {
    console.error(`--kind expects auto, deno-compile or self-contained, got "${kind}"`);
    return 2;
  }
  if (!(values.compression in COMPRESSIONS)) {
    console.error(`--compression expects gzip, xz or zstd, got "${values.compression}"`);
    return 2;
  }
  const denort = findDenort();
  if (kind !== "self-contained" && "path" in denort) return await denoCompile(output, denort.path);
  if (kind === "deno-compile" && "missing" in denort) {
    console.error(`Cannot run deno compile: ${denort.missing}`);
    return 1;
  }
  if ("missing" in denort) console.log(`${denort.missing}: building the self-contained kind`);
  const built = await buildSelfContained({
    output,
    runtime: values.runtime,
    compression: values.compression as Compression,
    level: Number(values.level),
  });
  const mb = (built.bytes / 1e6).toFixed(1);
  console.log(`Built ${output} (self-contained, ${mb} MB, content ${built.contentHash})`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
