import { assertEquals } from "../_helpers/assert.ts";
import { type AclRule, compileAcl, validateAclConditions } from "../../engine/acl.ts";
import { parseIp } from "../../engine/ip_address.ts";
import { RequestView } from "../../engine/request_view.ts";
import type { EngineRequest } from "../../engine/types.ts";

function view(over: Partial<EngineRequest> = {}, host = "shop.test"): RequestView {
  return new RequestView({ method: "GET", path: "/", query: "", headers: [], ...over }, host);
}

const rule = (over: Partial<AclRule>): AclRule => ({
  id: "r",
  name: "rule",
  siteId: null,
  enabled: true,
  action: "block",
  conditions: {},
  ...over,
});

const ip = parseIp("203.0.113.9")!;

Deno.test("ACL conditions on method, path, host, header, query and address must all hold", () => {
  const acl = compileAcl([rule({
    conditions: {
      methods: ["post"],
      path: { prefix: "/api/" },
      hosts: ["*.test"],
      header: { name: "X-Debug" },
      query: { name: "mode", pattern: "^raw$" },
      cidrs: ["203.0.113.0/24"],
    },
  })]);
  const full: Partial<EngineRequest> = {
    method: "POST",
    path: "/api/x",
    query: "mode=raw",
    headers: [["x-debug", "1"]],
  };
  assertEquals(acl.evaluate(view(full), ip, "s").decisive?.id, "r");
  assertEquals(acl.evaluate(view({ ...full, method: "GET" }), ip, "s").decisive, undefined);
  assertEquals(acl.evaluate(view({ ...full, path: "/web" }), ip, "s").decisive, undefined);
  assertEquals(acl.evaluate(view(full, "other.example"), ip, "s").decisive, undefined);
  assertEquals(acl.evaluate(view({ ...full, headers: [] }), ip, "s").decisive, undefined);
  assertEquals(acl.evaluate(view({ ...full, query: "mode=rawx" }), ip, "s").decisive, undefined);
  assertEquals(acl.evaluate(view(full), parseIp("198.51.100.1"), "s").decisive, undefined);
});

Deno.test("ACL path regex conditions use RE2", () => {
  const acl = compileAcl([rule({ conditions: { path: { regex: "\\.(bak|old)$" } } })]);
  assertEquals(acl.evaluate(view({ path: "/db.bak" }), ip, "s").decisive?.id, "r");
  assertEquals(acl.evaluate(view({ path: "/db.txt" }), ip, "s").decisive, undefined);
});

Deno.test("ACL rules run in order: log continues, the first allow/block/challenge decides", () => {
  const acl = compileAcl([
    rule({ id: "log", action: "log" }),
    rule({ id: "allow", action: "allow", conditions: { path: { prefix: "/health" } } }),
    rule({ id: "challenge", action: "challenge" }),
    rule({ id: "block" }),
  ]);
  assertEquals(acl.evaluate(view({ path: "/health" }), ip, "s").logged, ["log"]);
  assertEquals(acl.evaluate(view({ path: "/health" }), ip, "s").decisive?.id, "allow");
  assertEquals(acl.evaluate(view({ path: "/x" }), ip, "s").decisive?.id, "challenge");
});

Deno.test("ACL rules scoped to another site or disabled are skipped", () => {
  const acl = compileAcl([rule({ id: "b", siteId: "b" }), rule({ id: "off", enabled: false })]);
  assertEquals(acl.evaluate(view(), ip, "a").decisive, undefined);
  assertEquals(acl.evaluate(view(), ip, "b").decisive?.id, "b");
});

Deno.test("an ACL country condition matches through the GeoIP lookup and never without it", () => {
  const geo = {
    country: (a: { words: readonly number[] }) => a.words[0]! >>> 24 === 203 ? "AU" : "DE",
  };
  const r = rule({ conditions: { countries: ["au"] } });
  assertEquals(compileAcl([r], geo).evaluate(view(), ip, "s").decisive?.id, "r");
  assertEquals(compileAcl([r], geo).evaluate(view(), parseIp("8.8.8.8"), "s").decisive, undefined);
  assertEquals(compileAcl([r]).evaluate(view(), ip, "s").decisive, undefined);
});

Deno.test("validateAclConditions() names the bad field with the engine's message", () => {
  assertEquals(validateAclConditions({ path: { regex: "(" } })?.field, "conditions.path.regex");
  assertEquals(validateAclConditions({ cidrs: ["10.0.0.0/8", "nope"] }), {
    field: "conditions.cidrs[1]",
    message: 'Invalid address or network: "nope"',
  });
  assertEquals(validateAclConditions({ header: { name: "x", pattern: "a" } }), undefined);
});

Deno.test("an ACL method condition sees the methods a request's overrides name", () => {
  const block = compileAcl([rule({ conditions: { methods: ["DELETE"] } })]);
  const form: [string, string] = ["content-type", "application/x-www-form-urlencoded"];
  const overrides: Array<Partial<EngineRequest>> = [
    { headers: [["x-http-method-override", "DELETE"]] },
    { headers: [["x-http-method", "delete"]] },
    { headers: [["x-method-override", " Delete "]] },
    { query: "_method=DELETE" },
    { headers: [form], body: new TextEncoder().encode("a=1&_method=DELETE") },
  ];
  for (const over of overrides) {
    const v = view({ method: "POST", ...over });
    assertEquals(block.evaluate(v, ip, "s").decisive?.id, "r", JSON.stringify(over.headers));
  }
  assertEquals(block.evaluate(view({ method: "POST" }), ip, "s").decisive, undefined);
  // An allow rule holds only when every method the request names is allowed.
  const allow = compileAcl([rule({ action: "allow", conditions: { methods: ["GET", "HEAD"] } })]);
  assertEquals(allow.evaluate(view({ method: "GET" }), ip, "s").decisive?.id, "r");
  const override = view({ method: "GET", headers: [["x-http-method-override", "PUT"]] });
  assertEquals(allow.evaluate(override, ip, "s").decisive, undefined);
});

Deno.test("ACL path conditions judge the normalised path of the site's upstream kind", () => {
  const acl = compileAcl([
    rule({ id: "p", conditions: { path: { prefix: "/admin" } } }),
    rule({ id: "x", conditions: { path: { regex: "^/Reports/[0-9]+$" } } }),
  ]);
  const at = (path: string, kind: "generic" | "nginx" | "iis" | "java" = "generic") =>
    acl.evaluate(
      new RequestView({ method: "GET", path, query: "", headers: [] }, "shop.test", kind),
      ip,
      "s",
    ).decisive?.id;
  for (const p of ["/x/../admin", "//admin", "/./admin", "/%2e/admin", "/%2fadmin", "/ADMIN"]) {
    assertEquals(at(p), "p", p);
  }
  assertEquals(at("/ADMIN", "nginx"), undefined);
  assertEquals(at("/x/..;/admin", "java"), "p");
  assertEquals(at("/x/..;/admin", "nginx"), undefined);
  assertEquals(at("/%5cadmin", "iis"), "p");
  assertEquals(at("/REPORTS/12/"), "x", "a twin folds the pattern's capitals");
  assertEquals(at("/reports/12", "nginx"), undefined);
  acl.release();
});
