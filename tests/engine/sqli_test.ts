import assert from "node:assert/strict";
import { analyzeSql, sqli } from "../../engine/sqli.ts";
import { mayBeRuleWord, WORD_RULE_WORDS } from "../../engine/sql_rules.ts";
import {
  CONDITION_WORDS,
  DELAY_FUNCTIONS,
  ERROR_FUNCTIONS,
  SCHEMA_NAMES,
} from "../../engine/sql_vocabulary.ts";
import type { DetectorInput } from "../../engine/types.ts";

const cases = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/engine/sqli.json", import.meta.url)),
) as { attack: unknown[]; benign: unknown[] };

/** High and above is what blocks at the default level. */
const BLOCKS = 70;

function input(value: string): DetectorInput {
  return {
    input: { source: "query", name: "q", value },
    location: "query:q",
    decoded: decodeURIComponent(value.replaceAll("%A0", "%C2%A0")),
    raw: value,
  };
}

Deno.test("sqli() blocks every attack of the data file", () => {
  for (const attack of cases.attack.filter((c): c is string => typeof c === "string")) {
    const finding = sqli(input(attack));
    assert.ok(finding !== undefined && finding.score >= BLOCKS, `not blocked: ${attack}`);
    assert.equal(finding.class, "sqli");
  }
});

Deno.test("sqli() lets every benign look-alike of the data file pass", () => {
  for (const text of cases.benign.filter((c): c is string => typeof c === "string")) {
    const verdict = analyzeSql(text);
    assert.ok(
      verdict === undefined || verdict.score < BLOCKS,
      `blocked: ${text} (${verdict?.rule})`,
    );
  }
});

Deno.test("sqli() catches a UNION SELECT after a quote", () => {
  assert.equal(analyzeSql("x' union select username,password from users--")?.rule, "sqli.union");
});

Deno.test("sqli() reads a tautology only after the literal is closed", () => {
  assert.equal(analyzeSql("1' or '1'='1")?.rule, "sqli.tautology");
  assert.equal(analyzeSql("\\' or \\'1\\'=\\'1"), undefined);
});

Deno.test("sqli() treats MySQL executable comments as code", () => {
  assert.equal(analyzeSql("1 /*!50000union*/ /*!select*/ 1,2")?.rule, "sqli.union");
});

Deno.test("sqli() names the rule and cuts the evidence near the injection", () => {
  const finding = sqli(input("some text then 1' and sleep(5)#"));
  assert.equal(finding?.ruleId, "sqli.delay");
  assert.ok(finding!.evidence.includes("sleep(5)"));
  assert.ok(finding!.evidence.length <= 120);
});

Deno.test("sqli() never throws on hostile shapes", () => {
  for (const text of ["'".repeat(5000), "(".repeat(3000), "/*!".repeat(1000), "\\".repeat(99)]) {
    analyzeSql(text);
  }
});

Deno.test("sqli() reads a whole long value: padding before the injection buys no bypass", () => {
  // Every amount of padding, including the ones that put the injection across a boundary of
  // the token windows the lexer reads in.
  for (let words = 0; words <= 420; words++) {
    const padded = "note ".repeat(words);
    const raw = analyzeSql(`${padded}1 union select password from users`);
    assert.ok(raw !== undefined && raw.score >= BLOCKS, `union missed after ${words} words`);
    assert.equal(raw.rule, "sqli.union");
    const tail = analyzeSql(`x' ${", 1".repeat(words)}; drop table users --`);
    assert.ok(tail !== undefined && tail.score >= BLOCKS, `stacked missed after ${words} items`);
  }
});

Deno.test("sqli() points at an injection deep in a long value", () => {
  const text = `${"lorem ipsum dolor ".repeat(150)}1 union select password from users --`;
  const verdict = analyzeSql(text);
  assert.equal(verdict?.rule, "sqli.union");
  assert.ok(verdict.offset > 2000, `offset ${verdict.offset} is not where the injection is`);
});

Deno.test("sqli() stays quiet on long prose that mentions SQL words far apart", () => {
  const prose = "Select the union of both sets, or compare them where the order matters. "
    .repeat(80);
  const verdict = analyzeSql(prose);
  assert.ok(verdict === undefined || verdict.score < BLOCKS, `blocked: ${verdict?.rule}`);
});

Deno.test("WORD_RULE_WORDS holds every word wordRules() names, so other words can skip it", async () => {
  const source = await Deno.readTextFile(new URL("../../engine/sql_rules.ts", import.meta.url));
  const start = source.indexOf("function wordRules(");
  const body = source.slice(start, source.indexOf("\n}\n", start));
  // The words it compares a token's own text with: `case "union":`, `t.text === "dual"`.
  const named = [
    ...body.matchAll(/case "([a-z_]+)":/g),
    ...body.matchAll(/\bt\.text === "([a-z_]+)"/g),
  ].map((m) => m[1]!);
  assert.ok(named.length >= 12);
  for (const word of named) assert.ok(WORD_RULE_WORDS.has(word), word);
  // The sets it looks the word up in.
  for (const set of [CONDITION_WORDS, SCHEMA_NAMES, DELAY_FUNCTIONS, ERROR_FUNCTIONS]) {
    for (const word of set) assert.ok(WORD_RULE_WORDS.has(word), word);
  }
  const sets = [...body.matchAll(/\b([A-Z_]+)\.has\((?:t\.text|name)\)/g)].map((m) => m[1])
    .filter((set) => set !== "WORD_RULE_WORDS");
  assert.deepEqual(
    [...new Set(sets)].sort(),
    ["CONDITION_WORDS", "DELAY_FUNCTIONS", "ERROR_FUNCTIONS", "SCHEMA_NAMES"],
  );
});

Deno.test("mayBeRuleWord() is true for every word WORD_RULE_WORDS holds and false for most prose", () => {
  for (const word of WORD_RULE_WORDS) assert.ok(mayBeRuleWord(word), word);
  // A word of another first letter and length, in any alphabet or length, is not one.
  for (const word of ["", "é", "x".repeat(40), "ünion"]) {
    assert.equal(mayBeRuleWord(word), true, word);
  }
  const prose = "the quick brown fox jumps over the lazy dog while people read books".split(" ");
  const skipped = prose.filter((w) => !mayBeRuleWord(w));
  for (const w of skipped) assert.ok(!WORD_RULE_WORDS.has(w), w);
  assert.ok(skipped.length >= prose.length / 2, `only ${skipped.join(" ")} skipped`);
});
