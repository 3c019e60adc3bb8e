import { assertEquals, ok } from "../../_helpers/assert.ts";
import { COMMANDS } from "../../../cli.ts";
import {
  catalogues,
  commandHelp,
  parseLang,
  placeholders,
  translator,
} from "../../../cli/i18n/i18n.ts";
import { EN } from "../../../cli/i18n/messages_en.ts";
import { HELP_ZH_CN, ZH_CN } from "../../../cli/i18n/messages_zh_cn.ts";

Deno.test("every English message has a Simplified Chinese text with the same placeholders", () => {
  assertEquals(Object.keys(ZH_CN).sort(), Object.keys(EN).sort());
  for (const [id, english] of Object.entries(EN)) {
    const chinese = ZH_CN[id as keyof typeof EN];
    ok(chinese.trim().length > 0, `${id} has an empty Chinese text`);
    assertEquals(placeholders(chinese), placeholders(english), `placeholders of ${id}`);
  }
});

Deno.test("every command has Chinese help, and its usage starts with the same command line", () => {
  for (const spec of COMMANDS) {
    const words = spec.words.join(" ");
    const zh = HELP_ZH_CN[words];
    ok(
      zh,
      `command "${words}" has no zh-CN help: add it to HELP_ZH_CN in cli/i18n/messages_zh_cn.ts`,
    );
    assertEquals(zh.usage.split("\n")[0], spec.usage.split("\n")[0], `usage line of ${words}`);
    ok(/[\u4e00-\u9fff]/.test(zh.summary), `the zh-CN summary of "${words}" is not Chinese`);
  }
});

Deno.test("no Chinese help is left over for a command that does not exist", () => {
  const known = new Set(COMMANDS.map((c) => c.words.join(" ")));
  for (const words of Object.keys(HELP_ZH_CN)) ok(known.has(words), `stale help for "${words}"`);
});

Deno.test("translator() fills placeholders and keeps unknown ones visible", () => {
  const en = translator("en");
  assertEquals(en("cli.unknown_command", { command: "x" }), 'Unknown command: "x"');
  assertEquals(en("cli.unknown_command"), 'Unknown command: "{command}"');
  assertEquals(translator("zh-CN")("cli.unknown_command", { command: "x" }), "未知命令：“x”");
  assertEquals(translator("zh-CN").lang, "zh-CN");
});

Deno.test("parseLang() accepts the supported languages in any case and with an underscore", () => {
  assertEquals(parseLang("en"), "en");
  assertEquals(parseLang("zh-CN"), "zh-CN");
  assertEquals(parseLang("zh_cn"), "zh-CN");
  assertEquals(parseLang("ZH-cn"), "zh-CN");
  assertEquals(parseLang("fr"), undefined);
  assertEquals(parseLang("zh"), undefined);
  assertEquals(parseLang(""), undefined);
});

Deno.test("commandHelp() falls back to the English text only for English", () => {
  const english = { summary: "S", usage: "U" };
  assertEquals(commandHelp("en", ["store", "backup"], english), english);
  assertEquals(commandHelp("zh-CN", ["no", "such"], english), english);
  ok(commandHelp("zh-CN", ["store", "backup"], english).summary !== "S");
  ok(Object.keys(catalogues()).length === 2);
});
