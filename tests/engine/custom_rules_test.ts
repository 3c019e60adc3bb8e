import { assertEquals, ok } from "../_helpers/assert.ts";
import { compileCustomRules, type CustomRule, validatePattern } from "../../engine/custom_rules.ts";
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
