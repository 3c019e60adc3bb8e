/**
 * Command words of one or two letters (`w`, `id`, `ls`) count only where the shell would end
 * them: cipher text (bot-manager sensor data) puts them after a separator by chance, followed
 * by any punctuation, and no shell runs `;w(`.
 */
import assert from "node:assert/strict";
import { cmdi } from "../../engine/cmdi.ts";
import { engineInput } from "../_helpers/engine_input.ts";

const score = (text: string) =>
  cmdi(engineInput(text, { source: "json", name: "sensor_data" }))?.score ?? 0;

Deno.test("a short command followed by punctuation no shell ends it with is no command", () => {
  for (
    const text of [
      "x;w(*3d4",
      "a`w)'he,ax",
      "q|w>$sjff]o_2",
      "z&vi>1}t_y",
      "k`cp)w?g+a",
      'a`w"$<a8*ry',
      'q|df"^n8di',
    ]
  ) {
    assert.ok(score(text) < 40, `${text}: ${score(text)}`);
  }
});

Deno.test("a short command the shell ends still counts", () => {
  for (
    const text of [
      "x;id",
      "x; id;",
      "a`id`",
      "a$(id)",
      "x|ls -la /",
      "x;id>/tmp/o",
      "x';id'",
      'x";id" ',
    ]
  ) {
    assert.ok(score(text) >= 70, `${text}: ${score(text)}`);
  }
});
