import { assertEquals } from "../_helpers/assert.ts";
import { COMPILE_INCLUDES } from "../../scripts/compile_includes.ts";

const ROOT = new URL("../../", import.meta.url);
const SOURCE_DIRS = ["app", "db", "engine", "mod", "routes"];
const LOADED_BY_URL = /new URL\(\s*"(\.\.?\/[^"]+\.ts)"\s*,\s*import\.meta\.url\s*\)/g;

function* sourceFiles(dir: URL, rel: string): Generator<string> {
  for (const entry of Deno.readDirSync(dir)) {
    const path = `${rel}/${entry.name}`;
    if (entry.isDirectory) yield* sourceFiles(new URL(`${entry.name}/`, dir), path);
    else if (entry.name.endsWith(".ts")) yield path;
  }
}

/** Every module the product's source loads by URL at run time, as a path from the repository. */
function modulesLoadedByUrl(): string[] {
  const found = new Set<string>();
  const files = [
    ...SOURCE_DIRS.flatMap((d) => [...sourceFiles(new URL(`${d}/`, ROOT), d)]),
    "main.ts",
    "cli.ts",
  ];
  for (const file of files) {
    const text = Deno.readTextFileSync(new URL(file, ROOT));
    for (const m of text.matchAll(LOADED_BY_URL)) {
      found.add(new URL(m[1]!, new URL(file, ROOT)).pathname.slice(ROOT.pathname.length));
    }
  }
  return [...found].sort();
}

const covered = (path: string) =>
  COMPILE_INCLUDES.some((inc) => path === inc || path.startsWith(`${inc}/`));

Deno.test("the compiled binary embeds every module the source loads by URL (worker entry points)", () => {
  const loaded = modulesLoadedByUrl();
  // The four workers known today must be among what the scan finds, or the scan itself is broken.
  for (
    const w of [
      "mod/access_log/writer_thread.ts",
      "app/data_worker.ts",
      "mod/protection/ip_list_fold_worker.ts",
      "mod/ops/store_jobs_worker.ts",
    ]
  ) {
    assertEquals(loaded.includes(w), true, `${w} not found by the scan: ${loaded.join(", ")}`);
  }
  assertEquals(loaded.filter((p) => !covered(p)), []);
});

Deno.test("every path the compile step embeds exists", () => {
  const missing = COMPILE_INCLUDES.filter((p) => {
    try {
      Deno.statSync(new URL(p, ROOT));
      return false;
    } catch {
      return true;
    }
  });
  assertEquals(missing, []);
});
