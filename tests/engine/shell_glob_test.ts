/** The command a shell wildcard word expands to (engine/shell_glob.ts), matched without a RegExp. */
import { assertEquals } from "../_helpers/assert.ts";
import { commandMatching } from "../../engine/shell_glob.ts";

Deno.test("commandMatching() names the one command a wildcard word expands to", () => {
  assertEquals(commandMatching("c?t"), "cat");
  assertEquals(commandMatching("n[c]"), "nc");
  assertEquals(commandMatching("c[a]t"), "cat");
  assertEquals(commandMatching("b?se64"), "base64");
  assertEquals(commandMatching("wh?ami"), "whoami");
  assertEquals(commandMatching("*oami"), "whoami");
  assertEquals(commandMatching("c[!x]t"), "cat");
  assertEquals(commandMatching("c[!a]t"), "cut");
});

Deno.test("commandMatching() names nothing for words that match nearly anything, or no command", () => {
  for (const word of ["*", "??", "???", "?*", "cat", "", "zz?q", "c?t".repeat(9)]) {
    assertEquals(commandMatching(word), undefined, word);
  }
});
