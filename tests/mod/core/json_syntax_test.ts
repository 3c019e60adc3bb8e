/** parseJson(): where malformed JSON goes wrong, agreeing with JSON.parse on what is JSON. */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { describeJsonError, parseJson } from "../../../mod/core/json_syntax.ts";

function errorOf(text: string) {
  const r = parseJson(text);
  if (r.ok) throw new Error(`parsed: ${text}`);
  return r.error;
}

Deno.test("parseJson() returns the value of valid JSON", () => {
  assertEquals(parseJson('{"a": [1, 2.5e-3, "x\\u00e9", true, null]}'), {
    ok: true,
    value: { a: [1, 2.5e-3, "x\u00e9", true, null] },
  });
});

Deno.test("parseJson() names the line and column of an unexpected token (JSON.parse gives no position for it)", () => {
  const e = errorOf('{\n  "name": "shop",\n  "port": x\n}');
  assertEquals([e.line, e.column, e.found, e.expected], [3, 11, "x", "value"]);
  assertEquals(describeJsonError(e), 'line 3, column 11: unexpected "x", expected a value');
});

Deno.test("parseJson() says what was expected for each kind of mistake", () => {
  for (
    const [text, where, text2] of [
      ['{"a": 1', [1, 8], 'unexpected end of input, expected "," or "}"'],
      ['{"a" 1}', [1, 6], 'unexpected "1", expected ":"'],
      ['{"a": 1,}', [1, 9], 'unexpected "}", expected a property name in double quotes'],
      ["{'a': 1}", [1, 2], `unexpected "'", expected a property name in double quotes`],
      ["[1, 2,]", [1, 7], 'unexpected "]", expected a value'],
      ["[1 2]", [1, 4], 'unexpected "2", expected "," or "]"'],
      ['{"a":1}}', [1, 8], 'unexpected "}", expected the end of the input'],
      ["", [1, 1], "unexpected end of input, expected a value"],
      ["  \n  ", [2, 3], "unexpected end of input, expected a value"],
      ["nul", [1, 4], 'unexpected end of input, expected "null"'],
      ["tru e", [1, 4], 'unexpected " ", expected "true"'],
      ["01", [1, 2], 'unexpected "1", expected the end of the input'],
      ["-", [1, 2], "unexpected end of input, expected a digit"],
      ["1.", [1, 3], "unexpected end of input, expected a digit"],
      ["1e+", [1, 4], "unexpected end of input, expected a digit"],
      ['"abc', [1, 5], "unexpected end of input, expected a closing quote"],
      [
        '"a\\x"',
        [1, 4],
        'unexpected "x", expected an escape (\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX)',
      ],
      ['"\\u12G4"', [1, 6], 'unexpected "G", expected a hexadecimal digit'],
      [
        '"a\tb"',
        [1, 3],
        'unexpected "\\t", expected a control character to be escaped (\\n, \\t, \\u0000, ...)',
      ],
      ['{"é": "ü", x}', [1, 12], 'unexpected "x", expected a property name in double quotes'],
      ['\uFEFF{"a":1}', [1, 1], 'unexpected "\uFEFF", expected a value'],
    ] as const
  ) {
    const e = errorOf(text);
    assertEquals([e.line, e.column], where, JSON.stringify(text));
    assertEquals(describeJsonError(e), `line ${where[0]}, column ${where[1]}: ${text2}`, text);
  }
});

Deno.test("parseJson() handles any nesting depth without recursion", () => {
  const deep = "[".repeat(100_000) + "]".repeat(99_999) + ",";
  const e = errorOf(deep);
  assertEquals([e.line, e.column, e.found, e.expected], [1, 200_001, undefined, "value"]);
});

Deno.test("parseJson() agrees with JSON.parse on thousands of mutated documents", () => {
  const base = JSON.stringify(
    {
      name: "shop",
      hosts: ["shop.example", "*.shop.example"],
      port: -12.5e3,
      on: true,
      none: null,
      nested: { a: [1, { b: '\u00e9\\n"' }] },
    },
    null,
    2,
  );
  const alphabet = ' {}[]:,"\\\n\t0123456789-+.eEtrufalsnx\u00e9';
  let seed = 42;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  let invalid = 0;
  for (let round = 0; round < 5000; round++) {
    const chars = [...base];
    for (let k = 1 + rand(3); k > 0; k--) {
      const at = rand(chars.length);
      const op = rand(3);
      const ch = alphabet[rand(alphabet.length)]!;
      if (op === 0) chars.splice(at, 1);
      else if (op === 1) chars.splice(at, 0, ch);
      else chars[at] = ch;
    }
    const text = chars.join("");
    let v8: string | undefined;
    try {
      JSON.parse(text);
    } catch (err) {
      v8 = (err as Error).message;
    }
    const r = parseJson(text);
    assertEquals(r.ok, v8 === undefined, text);
    if (r.ok) continue;
    invalid++;
    // The scanner found an error of its own (it reports "the end" past the text only when it
    // would have accepted it), and where V8 names a position it is the same one.
    ok(r.error.offset <= text.length, text);
    ok(r.error.expected !== "end" || r.error.offset < text.length, text);
    const position = / at position (\d+)/.exec(v8!)?.[1];
    if (position !== undefined) assertEquals(r.error.offset, Number(position), `${text}\n${v8}`);
  }
  ok(invalid > 1000, `only ${invalid} of the mutated documents were invalid`);
});
