import assert from "node:assert/strict";
import { factorAlternation } from "../../engine/regex_factor.ts";

/** Gate-shaped patterns: literal alternations with classes, groups, anchors and lookbehinds. */
const PATTERNS: readonly RegExp[] = [
  /\.\.|[\\%\uff0e]|0x|etc|passwd|boot|win|proc|\.ht|-inf\/|\.ssh|\.git|\.gitconfig|\.env|var\/|\.[a-z]*shrc|:\/\/|data:|sam$|config\.sys/i,
  /java|Runtime|[Ll]ass|LASS|[#$%]\{|\$\\|@\w+@|\.exec|[Ee]xecute|sun\.|jdk\.|#_|#context|Sync\s*\(/,
  /_\$\$ND_FUNC|rO0AB|aced0005|[$_@]type|\[\s*["'](?:com|org|ch)\.|!!|!ruby|^gASV|[OC]:\d{1,4}:"|^a:\d{1,4}:\{/i,
  /%|@echo|::|for\s+[/%]|if\s+(?:not|exist|errorlevel|defined|\/i|%|")|cmd|iex|iwr|irm|sal |pwsh/,
  /(?<![.\w$>])(?:include(?:_once)?|require(?:_once)?|readfile|read)\s*\(/,
  /ab|a|abc|b?c|\bd|e*f/,
];
const ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789 ./\\%:_$#@{}()[]\"'!-";

function randomText(seed: number, length: number): string {
  let x = seed;
  let out = "";
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out += ALPHABET[x % ALPHABET.length];
  }
  return out;
}

/** Strings each pattern is likely to meet: its own literals, cut and padded, and noise. */
function probes(re: RegExp): string[] {
  const words = re.source.split(/[|()?:\\[\]^$*+{}]/).filter((w) => w.length > 0);
  const out: string[] = [];
  for (const w of words) {
    out.push(w, w.toUpperCase(), `x ${w} y`, w.slice(0, -1), `${w}(`, `.${w}`, `${w}$`);
  }
  for (let seed = 1; seed <= 400; seed++) out.push(randomText(seed, 1 + (seed % 40)));
  return out;
}

Deno.test("factorAlternation() matches exactly where the pattern it factors matches", () => {
  for (const re of PATTERNS) {
    const factored = factorAlternation(re);
    for (const text of probes(re)) {
      assert.equal(factored.test(text), re.test(text), `${re.source} on ${JSON.stringify(text)}`);
      assert.equal(text.search(factored), text.search(re), `index of ${JSON.stringify(text)}`);
    }
  }
});

Deno.test("factorAlternation() groups alternatives by their first character", () => {
  assert.equal(
    factorAlternation(/etc|env|win|\.ssh|\.git/i).source,
    "e(?:tc|nv)|win|\\.(?:ssh|git)",
  );
  assert.equal(factorAlternation(/x(?:ab|ac)y/).source, "x(?:a(?:b|c))y");
  assert.equal(factorAlternation(/a?b|ac/).source, "a?b|ac");
});

Deno.test("factorAlternation() leaves patterns with captures or backreferences alone", () => {
  const re = /(\d+)==\1|ab|ac/;
  assert.equal(factorAlternation(re), re);
});
