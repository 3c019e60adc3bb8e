/**
 * The estimate of RE2's program size (engine/re2_cost.ts) and the limit it enforces (issue #37,
 * item 5): a pattern whose program is too large is refused when compiled, with the limit named.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { MAX_PROGRAM_SIZE, programSize } from "../../engine/re2_cost.ts";
import { checkRe2, compileRe2 } from "../../engine/re2.ts";
import { validatePattern } from "../../engine/custom_rules.ts";

/** The issue's pattern: a 10 KB body took 31.7 s against it. */
const ISSUE_PATTERN = "[\\s\\S]{1,1000}[\\s\\S]{1,1000}[\\s\\S]{1,1000}z";

Deno.test("programSize() counts a literal by its UTF-8 bytes and a pattern's jumps", () => {
  assertEquals(programSize("abc"), 3 + 3);
  assertEquals(programSize("é"), 2 + 3);
  assertEquals(programSize("a|b"), 3 + 3);
  assertEquals(programSize("(a)"), 3 + 3);
  assertEquals(programSize("(?:a)"), 1 + 3);
  assertEquals(programSize("a*"), 2 + 3);
});

Deno.test("programSize() writes counted repetitions out and multiplies them through nesting", () => {
  assertEquals(programSize("a{10}"), 10 + 3);
  assertEquals(programSize("a{1,10}"), 10 + 9 + 3);
  const inner = programSize("(?:a{1,10})") - 3;
  assertEquals(programSize("(?:a{1,10}){1,10}") - 3, 10 * inner + 9);
  // Three repetitions in a row add up; the count of each multiplies what it repeats.
  ok(programSize(ISSUE_PATTERN) > 20 * MAX_PROGRAM_SIZE, String(programSize(ISSUE_PATTERN)));
});

Deno.test("programSize() counts character classes as RE2 compiles them: wide ones cost more", () => {
  ok(programSize("[a-z]") < programSize("[^a-z]"));
  ok(programSize("[a-z]") < programSize("."));
  ok(programSize("\\d") < programSize("\\p{L}"));
  ok(programSize("[a-z]", true) > programSize("[a-z]"), "case folding doubles letter ranges");
});

Deno.test("the patterns rules are made of stay far below the limit", () => {
  for (
    const p of [
      "^/api/v0/",
      "sqlmap",
      "(?:union|select)\\s+\\w+",
      "^/api/v[0-9]+/users/\\d+$",
      "[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}",
      "\\b(?:\\d{1,3}\\.){3}\\d{1,3}\\b",
      "(?:curl|wget|python-requests|go-http-client|nikto|sqlmap|nmap|masscan|zgrab)",
      "\\p{L}+",
    ]
  ) ok(programSize(p) <= MAX_PROGRAM_SIZE / 3, `${p}: ${programSize(p)}`);
});

Deno.test("compileRe2() refuses the issue's pattern for its size, naming the limit", () => {
  const r = compileRe2(ISSUE_PATTERN);
  ok(!r.ok);
  assertEquals(r.reason, "size");
  assertMatch(r.message, new RegExp(`over the limit of ${MAX_PROGRAM_SIZE}`));
  assertEquals(checkRe2(ISSUE_PATTERN)?.reason, "size");
  assertMatch(
    validatePattern(ISSUE_PATTERN)!,
    /^Pattern too large: RE2 would compile it to about \d+ instructions/,
  );
});

Deno.test("a pattern just under the limit compiles and says its size", () => {
  const r = compileRe2(".{1,100}#");
  ok(r.ok);
  ok(r.matcher.size <= MAX_PROGRAM_SIZE && r.matcher.size > 800, String(r.matcher.size));
  r.matcher.release();
  assertEquals(compileRe2(".{1,120}#").ok, false);
});
