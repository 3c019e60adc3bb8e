/**
 * The self-contained `waf` executable, for machines where `deno compile` has no `denort`: the
 * deno runtime, the program (scripts/program_files.ts) and the npm packages it loads, vendored
 * into a fresh DENO_DIR by `deno install --entrypoint`, packed behind a POSIX sh stub, makeself
 * style (scripts/self_contained_pack.ts).
 */
import { COMPILE_INCLUDES } from "./compile_includes.ts";
import { denoInfo, programGraph, stageProgram } from "./program_files.ts";
import { type Packed, type PackOptions, packSelfContained } from "./self_contained_pack.ts";

export interface SelfContainedOptions extends PackOptions {
  /** The deno binary to carry (default: the one running this script). */
  readonly runtime?: string;
}

const WORKERS = COMPILE_INCLUDES.filter((p) => p.endsWith(".ts"));
/** Packages the program must never carry (test tooling); a build that holds one is wrong. */
const TEST_ONLY = ["playwright-core", "typescript"];

/** Copies a cached package, hard-linking its files where the cache is on the same disk. */
async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const a = `${from}/${entry.name}`;
    const b = `${to}/${entry.name}`;
    if (entry.isDirectory) await copyTree(a, b);
    else if (entry.isFile) await Deno.link(a, b).catch(() => Deno.copyFile(a, b));
    else if (entry.isSymlink) await Deno.symlink(await Deno.readLink(a), b);
  }
}

/**
 * Vendors the npm packages into `<stage>/deno_dir`: the ones this machine has cached already are
 * copied first, so `deno install` only downloads what is missing (nothing, usually).
 */
async function vendor(stage: string): Promise<void> {
  const src = `${stage}/src`;
  const own = await denoInfo<{ npmCache: string }>([]);
  const info = await denoInfo<{ npmPackages: Record<string, { name: string; version: string }> }>(
    ["--config", `${src}/deno.json`, `${src}/main.ts`],
  );
  const npm = `${stage}/deno_dir/npm/registry.npmjs.org`;
  for (const { name, version } of Object.values(info.npmPackages)) {
    const from = `${own.npmCache}/registry.npmjs.org/${name}`;
    try {
      await Deno.stat(`${from}/${version}`);
    } catch {
      continue;
    }
    await copyTree(`${from}/${version}`, `${npm}/${name}/${version}`);
    await Deno.copyFile(`${from}/registry.json`, `${npm}/${name}/registry.json`).catch(() => {});
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["install", "--quiet", "--entrypoint", "main.ts", ...WORKERS],
    cwd: src,
    env: { DENO_DIR: `${stage}/deno_dir`, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.code !== 0) {
    throw new Error(`deno install --entrypoint failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  const carried = [...Deno.readDirSync(npm)].map((e) => e.name);
  const wrong = TEST_ONLY.filter((p) => carried.includes(p));
  if (wrong.length > 0) throw new Error(`the vendored packages include ${wrong.join(", ")}`);
}

/** Stages the program, its packages and the runtime, then packs them into one file. */
export async function buildSelfContained(options: SelfContainedOptions): Promise<Packed> {
  const stage = await Deno.makeTempDir({ prefix: "waf-exe-" });
  try {
    await stageProgram(await programGraph(), stage);
    await vendor(stage);
    await Deno.mkdir(`${stage}/bin`);
    await Deno.copyFile(Deno.realPathSync(options.runtime ?? Deno.execPath()), `${stage}/bin/deno`);
    await Deno.chmod(`${stage}/bin/deno`, 0o755);
    return await packSelfContained(stage, options);
  } finally {
    await Deno.remove(stage, { recursive: true });
  }
}
