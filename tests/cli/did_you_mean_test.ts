/** A mistyped command word gets "did you mean" (exit 2), in both languages of the command line. */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { nearest } from "../../mod/core/nearest.ts";

Deno.test('waf serv is a usage error that asks: did you mean "waf serve"?', async () => {
  const r = await cli(["serv", "--data-dir", "/nonexistent"]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /Unknown command: "serv"; did you mean "waf serve"\?/);
  assertEquals(r.stdout, "");
});

Deno.test("a misspelled verb of a noun suggests the command of that noun", async () => {
  const password = await cli(["user", "pasword", "admin"]);
  assertEquals(password.code, 2);
  assertMatch(password.stderr, /did you mean "waf user password"\?/);
  // The noun's commands are still listed below.
  assertMatch(password.stderr, /waf user ensure-admin /);
  const backup = await cli(["store", "bakup"]);
  assertEquals(backup.code, 2);
  assertMatch(backup.stderr, /did you mean "waf store backup"\?/);
});

Deno.test("a misspelled noun suggests the whole command, with its verb when that is close too", async () => {
  for (
    const [typed, meant] of [
      [["confg", "check"], "waf config check"],
      [["config", "chek"], "waf config check"],
      [["stup", "url"], "waf setup url"],
      [["sotre"], "waf store"],
      [["lnag", "show"], "waf lang show"],
    ] as const
  ) {
    const r = await cli([...typed]);
    assertEquals(r.code, 2, typed.join(" "));
    assertMatch(r.stderr, new RegExp(`did you mean "${meant}"\\?`), typed.join(" "));
  }
});

Deno.test("waf help with a misspelled command suggests the help of the command meant", async () => {
  const r = await cli(["help", "serv"]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /did you mean "waf help serve"\?/);
  const typo = await cli(["hlep", "user", "pasword"]);
  assertEquals(typo.code, 2);
  assertMatch(typo.stderr, /did you mean "waf help user password"\?/);
});

Deno.test("a word close to no command gets no suggestion", async () => {
  const r = await cli(["frobnicate"]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /Unknown command: "frobnicate"/);
  ok(!/did you mean/i.test(r.stderr), r.stderr);
  const verb = await cli(["user", "xyzzy"]);
  assertEquals(verb.code, 2);
  ok(!/did you mean/i.test(verb.stderr), verb.stderr);
});

Deno.test("the suggestion speaks Chinese when the command line does", async () => {
  const r = await cli(["serv"], { env: { lang: "zh-CN" } });
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /未知命令：“serv”；您是否要输入 “waf serve”？/);
  const verb = await cli(["user", "pasword"], { env: { lang: "zh-CN" } });
  assertEquals(verb.code, 2);
  assertMatch(verb.stderr, /您是否要输入 “waf user password”？/);
});

Deno.test("nearest() is the one suggestion rule: the configuration check uses it too", () => {
  assertEquals(nearest("serv", ["serve", "config", "setup"]), "serve");
  assertEquals(nearest("pasword", ["password", "rename"]), "password");
  assertEquals(nearest("frobnicate", ["serve", "config"]), undefined);
});
