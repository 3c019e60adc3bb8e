import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { tempDir } from "../_helpers/temp.ts";

Deno.test("waf lang show reports English as the default and the supported languages", async () => {
  await using dir = await tempDir();
  const r = await cli(["lang", "show", "--data-dir", dir]);
  assertEquals(r.code, 0);
  assertMatch(r.stdout, /Language: en \(default\)/);
  assertMatch(r.stdout, /Supported languages: en, zh-CN/);
});

Deno.test("waf lang set zh-CN persists in cli.json and later commands speak Chinese", async () => {
  await using dir = await tempDir();
  const set = await cli(["lang", "set", "zh-CN", "--data-dir", dir]);
  assertEquals(set.code, 0);
  assertMatch(set.stdout, /语言已设置为 zh-CN/);
  assertEquals(JSON.parse(await Deno.readTextFile(`${dir}/cli.json`)), { lang: "zh-CN" });
  assertEquals((await Deno.stat(`${dir}/cli.json`)).mode! & 0o777, 0o600);

  const show = await cli(["lang", "show", "--data-dir", dir]);
  assertMatch(show.stdout, /语言：zh-CN（保存在/);
  const unknown = await cli(["--data-dir", dir, "frobnicate"]);
  assertEquals(unknown.code, 2);
  assertMatch(unknown.stderr, /未知命令：“frobnicate”/);
  const help = await cli(["--data-dir", dir, "help", "store", "backup"]);
  assertMatch(help.stdout, /^waf store backup --out FILE\n\n在 “waf serve” 继续运行的同时/);
  const main = await cli(["--data-dir", dir, "--help"]);
  assertMatch(main.stdout, /用法：waf <命令>/);
  assertMatch(main.stdout, /store backup\s+在线写出存储的一致性备份/);

  const back = await cli(["lang", "set", "en", "--data-dir", dir]);
  assertMatch(back.stdout, /Language set to en/);
  assertMatch((await cli(["--data-dir", dir, "frobnicate"])).stderr, /Unknown command/);
});

Deno.test("waf lang set refuses an unknown language with the supported list and exit 2", async () => {
  await using dir = await tempDir();
  const r = await cli(["lang", "set", "fr", "--data-dir", dir]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /Unsupported language "fr": expected one of en, zh-CN/);
  let exists = true;
  await Deno.stat(`${dir}/cli.json`).catch(() => exists = false);
  ok(!exists, "nothing is written for a refused language");
  assertEquals((await cli(["lang", "set", "--data-dir", dir])).code, 2);
  assertEquals((await cli(["lang", "set", "en", "zh-CN", "--data-dir", dir])).code, 2);
});

Deno.test("WAF_LANG overrides the persisted language for one run", async () => {
  await using dir = await tempDir();
  await cli(["lang", "set", "en", "--data-dir", dir]);
  const r = await cli(["lang", "show", "--data-dir", dir], { env: { lang: "zh-CN" } });
  assertMatch(r.stdout, /语言：zh-CN（来自 WAF_LANG）/);
  const set = await cli(["lang", "set", "en", "--data-dir", dir], { env: { lang: "zh-CN" } });
  assertMatch(set.stdout, /WAF_LANG is set and selects zh-CN/);
});

Deno.test("an unsupported WAF_LANG is ignored and lang show says so", async () => {
  await using dir = await tempDir();
  const r = await cli(["lang", "show", "--data-dir", dir], { env: { lang: "klingon" } });
  assertEquals(r.code, 0);
  assertMatch(r.stdout, /Language: en \(default\)/);
  assertMatch(r.stdout, /WAF_LANG="klingon" is not a supported language and is ignored/);
});

Deno.test("usage errors of every operator command are translated and exit 2", async () => {
  await using dir = await tempDir();
  const zh = { env: { lang: "zh-CN" } };
  const flag = await cli(["store", "backup", "--frob", "--data-dir", dir], zh);
  assertEquals(flag.code, 2);
  assertMatch(
    flag.stderr,
    /waf store backup: 未知选项 “--frob”\n运行 “waf help store backup” 查看用法。/,
  );
  const missing = await cli(["store", "backup", "--data-dir", dir], zh);
  assertEquals(missing.code, 2);
  assertMatch(missing.stderr, /必须提供选项 --out/);
  const value = await cli(["logs", "pack", "--dir", "--data-dir", dir], zh);
  assertEquals(value.code, 2);
  const extra = await cli(["crp", "activate", "now", "--data-dir", dir], zh);
  assertEquals(extra.code, 2);
  assertMatch(extra.stderr, /多余的参数：“now”/);
});
