import assert from "node:assert/strict";
import { lexRest, lexSql } from "../../engine/sql_lexer.ts";

const CASES = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/engine/sqli.json", import.meta.url)),
) as { attack: string[]; benign: string[] };

Deno.test("lexRest() continues a limited lexSql() to what lexSql() reads whole", () => {
  const texts = [
    ...CASES.attack,
    ...CASES.benign,
    "1/*!50000union*/ select `a`, [b], @@version, 0x7e, N'x' -- c\n#>> '{a}' @> */ x",
  ];
  for (const text of texts) {
    const whole = lexSql(text);
    for (const limit of [1, 2, 3, 8]) {
      assert.deepEqual(lexRest(text, lexSql(text, limit)), whole, JSON.stringify(text));
    }
  }
});

/** Every string of the engine's test data, and each with `+` for its spaces and in its words. */
async function texts(): Promise<string[]> {
  const out: string[] = [];
  const walk = (x: unknown) => {
    if (typeof x === "string") out.push(x);
    else if (Array.isArray(x)) x.forEach(walk);
    else if (x !== null && typeof x === "object") Object.values(x).forEach(walk);
  };
  const dir = new URL("../testdata/engine/", import.meta.url);
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.endsWith(".json")) {
      walk(JSON.parse(await Deno.readTextFile(new URL(entry.name, dir))));
    }
  }
  const plus = out.flatMap((t) => [
    t.replaceAll(" ", "+"),
    t.replace(/ /g, (s, at: number) => (at % 3 === 0 ? "+" : s)),
    t.replace(/[a-z](?=[a-z(])/gi, (c, at: number) => (at % 5 === 0 ? `${c}+` : c)),
  ]);
  return [
    ...out,
    ...plus,
    "1e+5 +1 a+(b) a +(b) sleep+ (1) N+'x' '+'+\"+\" #>+'{a}' <+=> -+- --+\n/*+!*/ @+@x +",
  ];
}

const TEXTS = await texts();

Deno.test("lexSql() with the `+` reading's donor gives the tokens of the spaced text", () => {
  let compared = 0;
  for (const text of TEXTS) {
    if (!text.includes("+")) continue;
    const spaced = text.replaceAll("+", " ");
    const whole = lexSql(spaced);
    for (const given of [Infinity, 1, 3, 161]) {
      const donor = { text, tokens: lexSql(text, given), shift: 0, plus: true };
      for (const limit of [Infinity, 2, 161]) {
        const want = limit === Infinity ? whole : lexSql(spaced, limit);
        assert.deepEqual(lexSql(spaced, limit, donor), want, JSON.stringify(text));
        compared++;
      }
      const head = lexSql(spaced, 4, donor);
      assert.deepEqual(lexRest(spaced, head, donor), whole, JSON.stringify(text));
    }
  }
  assert.ok(compared > 1000);
});

Deno.test("lexSql() of what follows a quote, with the value's tokens, reads it afresh", () => {
  let compared = 0;
  for (const text of TEXTS) {
    const all = lexSql(text);
    const cut = lexSql(text, 5);
    for (let at = text.search(/['"]/); at >= 0; at = text.slice(at + 1).search(/['"]/) + at + 1) {
      const tail = text.slice(at + 1);
      const whole = lexSql(tail);
      for (const tokens of [all, cut]) {
        const donor = { text, tokens, shift: at + 1, plus: false };
        assert.deepEqual(lexSql(tail, Infinity, donor), whole, JSON.stringify([text, at]));
        assert.deepEqual(lexRest(tail, lexSql(tail, 2, donor), donor), whole);
        compared++;
      }
      if (text.slice(at + 1).search(/['"]/) < 0) break;
    }
  }
  assert.ok(compared > 1000);
});
