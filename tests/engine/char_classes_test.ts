/**
 * The engine's character-class loops accept exactly what the regular expressions they replaced
 * accept: every string of up to two code units from 0x00 to 0x17f, and 20,000 longer ones drawn
 * with a fixed seed from the characters each pattern treats specially.
 */
import assert from "node:assert/strict";
import { isInert, isPlainSegment, unusualInStandard } from "../../engine/char_classes.ts";

const INERT = /^[A-Za-z0-9_,-]*(?:\.[A-Za-z0-9_,-]+)*$/;
const PLAIN_SEGMENT = /^[A-Za-z0-9_.~@,-]*$/;
// deno-lint-ignore no-control-regex -- the former pattern, control characters included
const UNUSUAL_IN_STANDARD = /[<>'`{}$()%\\\x00-\x1f]/;

const CASES: ReadonlyArray<[string, (v: string) => boolean, RegExp]> = [
  ["isInert", isInert, INERT],
  ["isPlainSegment", isPlainSegment, PLAIN_SEGMENT],
  ["unusualInStandard", unusualInStandard, UNUSUAL_IN_STANDARD],
];

function strings(): string[] {
  const out = [""];
  for (let a = 0; a < 0x180; a++) {
    out.push(String.fromCharCode(a));
    for (let b = 0; b < 0x180; b++) out.push(String.fromCharCode(a, b));
  }
  const alphabet = "aZ09_,-.~@ <>'`{}$()%\\\x00\x1f\x20\x7f\u00e9\u2028+=/;:";
  let seed = 7;
  for (let i = 0; i < 20_000; i++) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    let s = "";
    for (let k = 3 + (seed % 12); k > 0; k--) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      s += alphabet[seed % alphabet.length];
    }
    out.push(s);
  }
  return out;
}

Deno.test("the engine's character-class loops accept what their former patterns accept", () => {
  const all = strings();
  for (const [name, f, re] of CASES) {
    let accepted = 0;
    for (const s of all) {
      const expected = re.test(s);
      if (f(s) !== expected) assert.fail(`${name}(${JSON.stringify(s)}) should be ${expected}`);
      if (expected) accepted++;
    }
    // Both answers occur, so the comparison is not one-sided.
    assert.ok(accepted > 100 && accepted < all.length - 100, name);
  }
  assert.equal(isInert(".env"), true);
  assert.equal(isInert("a..b"), false);
  assert.equal(isInert("v1.4."), false);
});
