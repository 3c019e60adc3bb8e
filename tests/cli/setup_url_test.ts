import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { tempDir } from "../_helpers/temp.ts";
import { openStore } from "../../db/store.ts";

Deno.test("waf setup url writes a fresh private setup file and prints only its path and receipt", async () => {
  await using dir = await tempDir();
  openStore(`${dir}/waf.db`, { now: Date.now() }).close();
  const r = await cli(["setup", "url", "--data-dir", dir]);
  assertEquals(r.code, 0, r.stderr);
  const path = `${dir}/runtime/setup.url`;
  assertMatch(r.stdout, new RegExp(`Setup link written to ${path} \\(valid for 10 minutes\\)`));
  assertMatch(r.stdout, /Receipt: [0-9a-f]{4}-[0-9a-f]{4}/);
  const url = (await Deno.readTextFile(path)).trim();
  const token = url.slice(url.indexOf("#token=") + 7);
  ok(token.length >= 32);
  ok(!r.stdout.includes(token) && !r.stderr.includes(token));
  assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
});

Deno.test("waf setup url speaks the selected language and refuses a missing store", async () => {
  await using dir = await tempDir();
  const missing = await cli(["setup", "url", "--data-dir", dir], { env: { lang: "zh-CN" } });
  assertEquals(missing.code, 1);
  assertMatch(missing.stderr, /处没有存储/);
  openStore(`${dir}/waf.db`, { now: Date.now() }).close();
  const r = await cli(["setup", "url", "--data-dir", dir], { env: { lang: "zh-CN" } });
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /安装链接已写入/);
  assertMatch(r.stdout, /回执：/);
});
