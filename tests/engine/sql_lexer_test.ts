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
