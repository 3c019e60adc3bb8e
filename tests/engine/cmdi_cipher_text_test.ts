/**
 * What cipher text (bot-manager sensor data) puts after a separator by chance is no command:
 * a word of one or two letters (`w`, `id`, `ls`) counts only where the shell would end it (no
 * shell runs `;w(`), and a wildcard path names a program only from the root, the home or the
 * working directory (`sd!/?` names none, `/???/c?t` is `/bin/cat`).
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

Deno.test("a wildcard path names a program only when it is rooted", () => {
  for (const text of ["x&sd!/?>zszr{t", "x`z[qq#qpfqem]8/*b`lvmp", "a|9/?}a)zne"]) {
    assert.ok(score(text) < 40, `${text}: ${score(text)}`);
  }
  for (const text of ["x;/???/c?t /???/p??s??", "x;/b*/n[c] -e sh", "x;/???/??t /???/??ss??"]) {
    assert.ok(score(text) >= 70, `${text}: ${score(text)}`);
  }
});
