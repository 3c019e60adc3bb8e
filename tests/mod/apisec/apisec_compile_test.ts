import { assertEquals } from "../../_helpers/assert.ts";
import { anchoredLiteral, compileApiSec } from "../../../mod/apisec/apisec_compile.ts";
import { apisecStoredSchema } from "../../../mod/apisec/apisec_schema.ts";

Deno.test("anchoredLiteral() finds the literal prefix an anchored pattern requires, conservatively", () => {
  assertEquals(anchoredLiteral("^/login$"), { prefix: "/login", rest: "$" });
  assertEquals(anchoredLiteral("^/api/"), { prefix: "/api/", rest: "" });
  assertEquals(anchoredLiteral("^\\/v1\\.0/[0-9]+$"), { prefix: "/v1.0/", rest: "regex" });
  assertEquals(anchoredLiteral("^/ab*"), { prefix: "/a", rest: "regex" });
  assertEquals(anchoredLiteral("^/a|/b"), undefined);
  assertEquals(anchoredLiteral("/api/"), undefined);
  assertEquals(anchoredLiteral("^\\d+"), { prefix: "", rest: "regex" });
});

Deno.test("route patterns match the same paths whether they reach RE2 or not", () => {
  const patterns = ["^/login$", "^/api/", "^/api/v1/orders/[0-9]+$", "^/ab*c", "orders", "^/x|^/y"];
  const paths = [
    "/login",
    "/login/",
    "/api/x",
    "/ap",
    "/api/v1/orders/12",
    "/api/v1/orders/x",
    "/ac",
    "/abbbc",
    "/a",
    "/y",
    "/my/orders",
  ];
  const c = compileApiSec(apisecStoredSchema.parse({
    rate_limits: patterns.map((p, i) => ({
      id: `r${i}`,
      method: "*",
      path_pattern: p,
      requests: 1,
      window: "1m",
    })),
  }));
  for (const [i, p] of patterns.entries()) {
    const js = new RegExp(p, "u");
    for (const path of paths) {
      assertEquals(c.rateLimits[i]!.path.test(path), js.test(path), `${p} on ${path}`);
    }
  }
  c.holder.release();
});
