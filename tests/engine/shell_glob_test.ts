/** The command a shell wildcard word expands to (engine/shell_glob.ts), matched without a RegExp. */
import { assertEquals } from "../_helpers/assert.ts";
import { commandMatching } from "../../engine/shell_glob.ts";

Deno.test("commandMatching() names the one command a wildcard word expands to", () => {
  const cases = [
    ["c?t", "cat"],
    ["n[c]", "nc"],
    ["c[a]t", "cat"],
    ["b?se64", "base64"],
    ["wh?ami", "whoami"],
    ["*oami", "whoami"],
    ["c[!x]t", "cat"],
    ["c[!a]t", "cut"],
  ] as const;
  for (const [word, command] of cases) assertEquals(commandMatching(word), command, word);
});

Deno.test("commandMatching() names nothing for words that match nearly anything, or no command", () => {
  for (const word of ["*", "??", "???", "?*", "cat", "", "zz?q", "c?t".repeat(9)]) {
    assertEquals(commandMatching(word), undefined, word);
  }
});
