import { assertEquals, ok } from "../_helpers/assert.ts";
import {
  compileCustomRules,
  type CustomRule,
  RULE_BUDGET,
  RULE_BUDGET_PER_CHAR,
  RULE_CALL_UNITS,
  ruleBudgetFor,
  ruleWeight,
  validatePattern,
} from "../../engine/custom_rules.ts";
import { WorkBudget } from "../../engine/work_budget.ts";
import { compileRe2, requiredLiteral } from "../../engine/re2.ts";
import { RequestView } from "../../engine/request_view.ts";
import type { EngineRequest } from "../../engine/types.ts";
import type { UpstreamKind } from "../../engine/path_normalize.ts";

function view(over: Partial<EngineRequest> = {}, kind: UpstreamKind = "generic"): RequestView {
  return new RequestView(
    { method: "GET", path: "/", query: "", headers: [], ...over },
    "a.test",
    kind,
  );
}

const rule = (over: Partial<CustomRule>): CustomRule => ({
  id: "r1",
  name: "rule",
  siteId: null,
  target: { kind: "path" },
  pattern: "^/admin",
  ignoreCase: false,
  action: "block",
  priority: 100,
  enabled: true,
  ...over,
});

Deno.test("compileRe2() refuses an invalid pattern with RE2's message", () => {
  const r = compileRe2("(unclosed");
  ok(!r.ok);
  assertEquals(r.message, "Invalid regular expression: /(unclosed/u: missing ): (unclosed");
});

Deno.test("compileRe2() refuses look-behind, which RE2 does not support", () => {
  assertEquals(
    validatePattern("(?<=a)b"),
    "Invalid regular expression: /(?<=a)b/u: invalid perl operator: (?<",
  );
});

Deno.test("a catastrophic pattern (a+)+$ against a 100 KB input completes", () => {
  const r = compileRe2("(a+)+$");
  ok(r.ok);
  assertEquals(r.matcher.test("a".repeat(100_000) + "!"), false);
  assertEquals(r.matcher.test("a".repeat(100_000)), true);
});

Deno.test("custom rules match each target kind", () => {
  const cases: Array<[CustomRule["target"], string, Partial<EngineRequest>]> = [
    [{ kind: "path" }, "^/adm in", { path: "/adm%20in" }],
    [{ kind: "query" }, "debug=1", { query: "x=2&debug=1" }],
    [{ kind: "param", name: "q" }, "^drop table$", { query: "q=drop+table" }],
    [{ kind: "any_param" }, "evil", {
      method: "POST",
      headers: [["content-type", "application/x-www-form-urlencoded"]],
      body: new TextEncoder().encode("a=1&b=evil"),
    }],
    [{ kind: "header", name: "user-agent" }, "sqlmap", { headers: [["user-agent", "sqlmap/1.7"]] }],
    [{ kind: "cookies" }, "role=admin", { headers: [["cookie", "a=1"], ["cookie", "role=admin"]] }],
    [{ kind: "body" }, "<!ENTITY", { body: new TextEncoder().encode("<?xml?><!ENTITY x>") }],
  ];
  for (const [target, pattern, req] of cases) {
    const compiled = compileCustomRules([rule({ target, pattern })]);
    assertEquals(compiled.evaluate(view(req), "s").decisive?.id, "r1", target.kind);
    assertEquals(compiled.evaluate(view(), "s").matched, [], `${target.kind} on an empty request`);
  }
});

Deno.test("custom rules run by priority; log rules record and the first block decides", () => {
  const compiled = compileCustomRules([
    rule({ id: "late-block", priority: 50 }),
    rule({ id: "early-log", priority: 10, action: "log" }),
    rule({ id: "disabled", priority: 1, enabled: false }),
    rule({ id: "other-site", priority: 5, siteId: "b" }),
    rule({ id: "last", priority: 90 }),
  ]);
  const r = compiled.evaluate(view({ path: "/admin" }), "a");
  assertEquals(r.matched, ["early-log", "late-block"]);
  assertEquals(r.decisive?.id, "late-block");
  assertEquals(compiled.size, 4);
});

Deno.test("custom rules honour case-insensitive matching when asked", () => {
  const compiled = compileCustomRules([rule({ pattern: "^/ADMIN", ignoreCase: true })]);
  assertEquals(compiled.evaluate(view({ path: "/admin" }, "nginx"), "a").decisive?.id, "r1");
  const strict = compileCustomRules([rule({ pattern: "^/ADMIN" })]);
  assertEquals(strict.evaluate(view({ path: "/admin" }, "nginx"), "a").decisive, undefined);
  // Where the site's upstream folds case (IIS, Express, and `generic`, the union), a path rule
  // compares case-insensitively whatever its flag: `/admin` is the same page as `/ADMIN` there.
  for (const kind of ["iis", "node", "generic"] as const) {
    assertEquals(strict.evaluate(view({ path: "/admin" }, kind), "a").decisive?.id, "r1", kind);
    const lower = compileCustomRules([rule({ pattern: "^/admin$" })]);
    assertEquals(lower.evaluate(view({ path: "/ADMIN" }, kind), "a").decisive?.id, "r1", kind);
    lower.release();
  }
  compiled.release();
  strict.release();
});

Deno.test("requiredLiteral() finds only literals every match must contain", () => {
  const cases: Array<[string, string | undefined]> = [
    ["evil[0-9]+", "evil"],
    ["^/admin/", "/admin/"],
    ["sqlmap", "sqlmap"],
    ["ab?cdef", "cdef"],
    ["abc*def", "def"],
    ["a{2,3}bcd", "bcd"],
    ["x\\.php$", "x.php"],
    ["foo|barbaz", undefined],
    ["(abc)+", undefined],
    ["(?i)zgrab", undefined],
    ["\\x41bcd", undefined],
    ["\\d+abc", "abc"],
    ["[\\]]abcd", undefined],
    ["ab", undefined],
  ];
  for (const [pattern, literal] of cases) assertEquals(requiredLiteral(pattern), literal, pattern);
});

Deno.test("the literal prefilter never changes what a rule matches", () => {
  const inputs = [
    "EVIL12",
    "evil12",
    "xevil9y",
    "evil",
    "ADMIN",
    "/admin/x",
    "abbbc",
    "acdef",
    "x.php",
  ];
  for (const pattern of ["evil[0-9]+", "^/admin/", "ab?cdef", "x\\.php$", "b+c"]) {
    for (const ignoreCase of [false, true]) {
      const r = compileRe2(pattern, { ignoreCase });
      ok(r.ok);
      const js = new RegExp(pattern, ignoreCase ? "iu" : "u");
      for (const input of inputs) {
        assertEquals(r.matcher.test(input), js.test(input), `${pattern} ${ignoreCase} ${input}`);
      }
    }
  }
});

Deno.test("ruleWeight() grows with the square of a program's size: 1 for light patterns", () => {
  assertEquals(ruleWeight(1), 1);
  assertEquals(ruleWeight(31), 1);
  assertEquals(ruleWeight(100), 10);
  assertEquals(ruleWeight(1000), 977);
});

Deno.test("a light rule reads the whole inspected body; a heavy one only its window", () => {
  const MIB = 1 << 20;
  const body = new TextEncoder().encode(`${"a".repeat(MIB)}#`);
  const light = compileCustomRules([rule({ target: { kind: "body" }, pattern: "a#" })]);
  assertEquals(light.evaluate(view({ body }), "s").decisive?.id, "r1");
  light.release();
  // `.{1,100}#`: about 900 instructions, so 21,050 characters of each target.
  const heavy = compileCustomRules([rule({ target: { kind: "body" }, pattern: ".{1,100}#" })]);
  const size = compileRe2(".{1,100}#");
  ok(size.ok);
  const window = Math.floor(RULE_CALL_UNITS / ruleWeight(size.matcher.size));
  size.matcher.release();
  const at = (n: number) => new TextEncoder().encode(`${"a".repeat(n)}#`);
  assertEquals(heavy.evaluate(view({ body: at(window - 1) }), "s").decisive?.id, "r1");
  assertEquals(heavy.evaluate(view({ body: at(window) }), "s").decisive, undefined);
  heavy.release();
});

Deno.test("the rules stop when their budget has no room for the next match, and say so", () => {
  const rules = compileCustomRules([
    rule({ id: "first", target: { kind: "header", name: "x-a" }, pattern: "aaa", action: "log" }),
    rule({
      id: "second",
      target: { kind: "header", name: "x-a" },
      pattern: "bbb",
      action: "block",
    }),
  ]);
  const v = view({ headers: [["x-a", "aaa bbb"]] });
  // Room for one match of 7 characters of a light rule, not for two.
  const r = rules.evaluate(v, "s", new WorkBudget(10));
  assertEquals(r.matched, ["first"]);
  assertEquals(r.decisive, undefined);
  assertEquals(r.exhausted, true);
  const whole = rules.evaluate(v, "s");
  assertEquals([whole.decisive?.id, whole.exhausted], ["second", undefined]);
  rules.release();
});

Deno.test("a request's rule budget grows with its size: a 1 MiB body affords heavy rules once", () => {
  const MIB = 1 << 20;
  const req = { method: "POST", path: "/", query: "", headers: [], body: new Uint8Array(MIB) };
  assertEquals(ruleBudgetFor(req), RULE_BUDGET + RULE_BUDGET_PER_CHAR * (MIB + 1));
  const heavy = (id: string) =>
    rule({ id, target: { kind: "body" }, pattern: `.{1,100}${id}`, action: "block" });
  const rules = compileCustomRules([heavy("x"), heavy("y"), heavy("z")]);
  const r = rules.evaluate(view({ body: new TextEncoder().encode("b".repeat(MIB)) }), "s");
  assertEquals([r.matched, r.decisive, r.exhausted], [[], undefined, true]);
  rules.release();
});
