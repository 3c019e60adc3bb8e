/**
 * What the single executable carries of this repository: every local file `main.ts` and the
 * worker entry points load (from Deno's own module graph, so the list follows the tree as it
 * moves), the folders of `scripts/compile_includes.ts`, and a `deno.json` whose import map keeps
 * only the npm packages that graph uses (test-only libraries such as playwright-core stay out).
 * `stageProgram` copies them into a build folder; `manifest` hashes what a build ships.
 */
import { COMPILE_INCLUDES } from "./compile_includes.ts";

export const ROOT = new URL("..", import.meta.url).pathname;

/** The program's local files (paths from the repository root) and the npm packages it imports. */
export interface ProgramGraph {
  readonly files: readonly string[];
  readonly npmPackages: ReadonlySet<string>;
}

interface InfoModule {
  specifier: string;
  error?: string;
}

/** Runs `deno info --json` with `args` and returns what it printed, parsed. */
export async function denoInfo<T>(
  args: readonly string[],
  env?: Record<string, string>,
): Promise<T> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.code !== 0) {
    throw new Error(`deno info ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(new TextDecoder().decode(out.stdout)) as T;
}

/** The npm package name in a graph specifier such as `npm:/@peculiar/x509@2.2.0/x`. */
export function npmName(specifier: string): string | undefined {
  const m = /^npm:\/?((?:@[^/@]+\/)?[^/@]+)@/.exec(specifier);
  return m?.[1];
}

const isFile = (path: string) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
};

const exists = (path: string) => {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
};

function* walk(rel: string): Generator<string> {
  for (const entry of Deno.readDirSync(`${ROOT}${rel}`)) {
    const path = `${rel}/${entry.name}`;
    if (entry.isDirectory) yield* walk(path);
    else if (entry.isFile) yield path;
  }
}

/** Module graph of `main.ts` plus every worker entry point, one `deno info` over a tiny root. */
export async function programGraph(): Promise<ProgramGraph> {
  const entries = ["main.ts", ...COMPILE_INCLUDES.filter((p) => p.endsWith(".ts"))];
  const tmp = await Deno.makeTempDir({ prefix: "waf-graph-" });
  try {
    const rootModule = `${tmp}/graph.ts`;
    await Deno.writeTextFile(
      rootModule,
      entries.map((e) => `import ${JSON.stringify(`file://${ROOT}${e}`)};\n`).join(""),
    );
    const info = await denoInfo<{ modules: InfoModule[] }>([
      "--config",
      `${ROOT}deno.json`,
      rootModule,
    ]);
    const files = new Set<string>();
    const npmPackages = new Set<string>();
    const rootUrl = `file://${ROOT}`;
    for (const m of info.modules) {
      if (m.error) throw new Error(`${m.specifier}: ${m.error}`);
      if (m.specifier.startsWith(rootUrl)) {
        files.add(decodeURIComponent(m.specifier.slice(rootUrl.length)));
      }
      const name = npmName(m.specifier);
      if (name) npmPackages.add(name);
    }
    const missing = COMPILE_INCLUDES.filter((p) => !exists(`${ROOT}${p}`));
    if (missing.length > 0) {
      throw new Error(
        `scripts/compile_includes.ts lists paths that do not exist: ${missing.join(", ")}`,
      );
    }
    for (const inc of COMPILE_INCLUDES) {
      if (isFile(`${ROOT}${inc}`)) files.add(inc);
      else for (const f of walk(inc)) files.add(f);
    }
    files.add("deno.lock");
    return { files: [...files].sort(), npmPackages };
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

/**
 * `deno.json` for the shipped program: the compiler options and unstable features as they are,
 * the import map reduced to what the graph uses, no tasks or tool settings.
 */
export function programConfig(config: Record<string, unknown>, used: ReadonlySet<string>) {
  const imports = Object.fromEntries(
    Object.entries((config.imports ?? {}) as Record<string, string>).filter(([, target]) => {
      const name = npmName(target);
      return name === undefined || used.has(name);
    }),
  );
  const { tasks: _t, fmt: _f, lint: _l, exclude: _e, ...rest } = config;
  return { ...rest, imports };
}

/** Copies the program's files into `<stage>/src/` with the reduced `deno.json`. */
export async function stageProgram(graph: ProgramGraph, stage: string): Promise<void> {
  for (const file of graph.files) {
    const to = `${stage}/src/${file}`;
    await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
    await Deno.copyFile(`${ROOT}${file}`, to);
  }
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  await Deno.writeTextFile(
    `${stage}/src/deno.json`,
    JSON.stringify(programConfig(config, graph.npmPackages), null, 2) + "\n",
  );
}

function* filesUnder(base: string, rel: string): Generator<string> {
  const entries = [...Deno.readDirSync(`${base}/${rel}`)];
  for (const entry of entries) {
    const path = `${rel}/${entry.name}`;
    if (entry.isDirectory) yield* filesUnder(base, path);
    else if (entry.isFile) yield path;
    else throw new Error(`${base}/${path} is neither a file nor a folder`);
  }
}

const hex = (buf: ArrayBuffer) =>
  Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");

export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  return hex(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

/**
 * `sha256sum -c` input for every file under the folders `tops` of `base` (byte order, like
 * `LC_ALL=C sort`), and its own SHA-256: the content hash that names a build.
 */
export async function manifest(
  base: string,
  tops: readonly string[],
): Promise<{ text: string; hash: string }> {
  const paths = tops.flatMap((t) => isFile(`${base}/${t}`) ? [t] : [...filesUnder(base, t)]);
  paths.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const lines: string[] = [];
  for (const path of paths) {
    // sha256sum escapes such names, and no file of ours should carry them.
    if (/[\n\\]/.test(path)) throw new Error(`cannot list ${JSON.stringify(path)} in a manifest`);
    lines.push(`${await sha256Hex(await Deno.readFile(`${base}/${path}`))}  ${path}`);
  }
  const text = lines.join("\n") + "\n";
  return { text, hash: await sha256Hex(text) };
}
