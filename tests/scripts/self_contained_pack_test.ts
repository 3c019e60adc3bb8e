/**
 * The self-contained stub (scripts/self_contained_stub.sh) on a tiny payload whose "deno" is a
 * shell script that prints what it was given: where it unpacks, that arguments, stdin and exit
 * codes pass through unchanged, the data-directory fallback, a tampered cache replaced, two first
 * runs at once, a damaged file refused.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { tempDir } from "../_helpers/temp.ts";
import { packSelfContained, RUN_FLAGS } from "../../scripts/self_contained_pack.ts";

const FAKE_DENO = `#!/bin/sh
printf 'DENO_DIR=%s\\n' "$DENO_DIR"
for a in "$@"; do printf 'arg=%s\\n' "$a"; done
case " $* " in *" exit-7 "*) exit 7 ;; *" stdin "*) cat ;; esac
`;

async function fakeBuild(dir: string): Promise<{ waf: string; hash: string }> {
  const stage = `${dir}/stage`;
  for (const d of ["bin", "src/app", "deno_dir/npm/registry.npmjs.org/x/1.0.0"]) {
    await Deno.mkdir(`${stage}/${d}`, { recursive: true });
  }
  await Deno.writeTextFile(`${stage}/bin/deno`, FAKE_DENO, { mode: 0o755 });
  await Deno.writeTextFile(`${stage}/src/main.ts`, "console.log('main');\n");
  await Deno.writeTextFile(`${stage}/src/app/worker.ts`, "export {};\n");
  await Deno.writeTextFile(`${stage}/src/deno.json`, "{}\n");
  await Deno.writeTextFile(`${stage}/deno_dir/npm/registry.npmjs.org/x/1.0.0/index.js`, "1;\n");
  const packed = await packSelfContained(stage, { output: `${dir}/waf`, level: 1 });
  await Deno.remove(stage, { recursive: true });
  return { waf: packed.output, hash: packed.contentHash };
}

interface Run {
  code: number;
  out: string;
  err: string;
}

async function run(
  waf: string,
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<Run> {
  const child = new Deno.Command(waf, {
    args,
    env: { PATH: "/usr/bin:/bin", ...env },
    clearEnv: true,
    cwd: waf.slice(0, waf.lastIndexOf("/")),
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const r = await child.output();
  const d = new TextDecoder();
  return { code: r.code, out: d.decode(r.stdout), err: d.decode(r.stderr) };
}

const argsOf = (out: string) =>
  out.split("\n").filter((l) => l.startsWith("arg=")).map((l) => l.slice(4));

Deno.test("the stub unpacks once into ~/.cache/waf/<content>/ and execs deno with the arguments unchanged", async () => {
  await using dir = await tempDir();
  const { waf, hash } = await fakeBuild(dir);
  assertEquals((await Deno.stat(waf)).mode! & 0o777, 0o755);
  await Deno.mkdir(`${dir}/home`);
  const cache = `${dir}/home/.cache/waf/${hash}`;
  const args = ["serve", "two words", "", "--", "*", "--data-dir=x y"];
  const r = await run(waf, args, { HOME: `${dir}/home` });
  assertEquals(r.code, 0, r.err);
  assertMatch(r.out, new RegExp(`^DENO_DIR=${cache}/deno_dir\n`));
  assertEquals(argsOf(r.out), [
    "run",
    ...RUN_FLAGS,
    "--config",
    `${cache}/src/deno.json`,
    `${cache}/src/main.ts`,
    ...args,
  ]);
  assertEquals(
    JSON.parse(await Deno.readTextFile(`${cache}/src/build.json`)),
    { kind: "self-contained", content_hash: hash },
  );
  assertEquals([...Deno.readDirSync(`${dir}/home/.cache/waf`)].map((e) => e.name), [hash]);
  const ino = (await Deno.stat(`${cache}/bin/deno`)).ino;
  assertEquals((await run(waf, ["exit-7"], { HOME: `${dir}/home` })).code, 7);
  const piped = await run(waf, ["stdin"], { HOME: `${dir}/home` }, "line one\nline two\n");
  assertMatch(piped.out, /line one\nline two\n$/);
  assertEquals((await Deno.stat(`${cache}/bin/deno`)).ino, ino);
});

Deno.test("the stub unpacks under XDG_CACHE_HOME, or under <data-dir>/.runtime/ when the home is unusable", async () => {
  await using dir = await tempDir();
  const { waf, hash } = await fakeBuild(dir);
  const xdg = await run(waf, ["--version"], { XDG_CACHE_HOME: `${dir}/xdg`, HOME: "/nonexistent" });
  assertEquals(xdg.code, 0, xdg.err);
  ok((await Deno.stat(`${dir}/xdg/waf/${hash}/bin/deno`)).isFile);
  // A home that is a file cannot hold a cache folder; with no home the data directory is used.
  await Deno.writeTextFile(`${dir}/home-file`, "");
  for (
    const [env, args, data] of [
      [{ HOME: `${dir}/home-file` }, ["--data-dir", `${dir}/d1`, "serve"], `${dir}/d1`],
      [{}, ["serve", `--data-dir=${dir}/d2`], `${dir}/d2`],
      [{}, ["--config", "--data-dir", "serve"], `${dir}/data`],
    ] as const
  ) {
    const r = await run(waf, [...args], env);
    assertEquals(r.code, 0, r.err);
    assertMatch(r.out, new RegExp(`DENO_DIR=${data}/\\.runtime/${hash}/deno_dir`));
    assertEquals((await Deno.stat(data)).mode! & 0o777, 0o700);
  }
});

Deno.test("the stub replaces a tampered cache and keeps one whose files only changed metadata", async () => {
  await using dir = await tempDir();
  const { waf, hash } = await fakeBuild(dir);
  const env = { HOME: `${dir}/home` };
  const cache = `${dir}/home/.cache/waf/${hash}`;
  assertEquals((await run(waf, [], env)).code, 0);
  await Deno.writeTextFile(`${cache}/src/main.ts`, "console.log('changed');\n");
  assertEquals((await run(waf, [], env)).code, 0);
  assertEquals(await Deno.readTextFile(`${cache}/src/main.ts`), "console.log('main');\n");
  const ino = (await Deno.stat(`${cache}/bin/deno`)).ino;
  await Deno.chmod(`${cache}/src/main.ts`, 0o644);
  assertEquals((await run(waf, [], env)).code, 0);
  assertEquals((await Deno.stat(`${cache}/bin/deno`)).ino, ino);
  assertEquals([...Deno.readDirSync(`${dir}/home/.cache/waf`)].map((e) => e.name), [hash]);
});

Deno.test("two first runs at once both start and leave one cache folder", async () => {
  await using dir = await tempDir();
  const { waf, hash } = await fakeBuild(dir);
  const env = { HOME: `${dir}/home` };
  const runs = await Promise.all([
    run(waf, ["a"], env),
    run(waf, ["b"], env),
    run(waf, ["c"], env),
  ]);
  for (const r of runs) assertEquals(r.code, 0, r.err);
  assertEquals([...Deno.readDirSync(`${dir}/home/.cache/waf`)].map((e) => e.name), [hash]);
});

Deno.test("a damaged file is refused with a message and leaves no cache behind", async () => {
  await using dir = await tempDir();
  const { waf } = await fakeBuild(dir);
  const bytes = await Deno.readFile(waf);
  // In the middle of the compressed payload, which starts after the stub's last line.
  const start = Number(
    /\nSTART=(\d+)\n/.exec(new TextDecoder().decode(bytes.subarray(0, 8192)))![1],
  );
  const at = Math.floor((start + bytes.length) / 2);
  bytes[at] = bytes[at]! ^ 0xff;
  await Deno.writeFile(waf, bytes);
  const r = await run(waf, ["--version"], { HOME: `${dir}/home` });
  assertEquals(r.code, 1);
  assertMatch(r.err, /waf: could not unpack .* \(damaged file or full disk\?\)/);
  assertEquals([...Deno.readDirSync(`${dir}/home/.cache/waf`)], []);
});
