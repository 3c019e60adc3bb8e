import { assertEquals, ok } from "../../_helpers/assert.ts";
import { validateConfig } from "../../../mod/config/config.ts";
import { authInputSchema } from "../../../mod/apisec/apisec_schema.ts";

Deno.test("validateConfig() accepts the specification's apisec blocks key for key", () => {
  const r = validateConfig({
    apisec: {
      validation: {
        enabled: true,
        schemas: [{
          id: "users",
          method: "GET",
          path_pattern: "^/api/users/[0-9]+$",
          required_params: [],
          required_headers: ["authorization"],
          max_body_bytes: 0,
          enabled: true,
        }],
      },
      rate_limits: [{
        id: "login",
        method: "POST",
        path_pattern: "^/login$",
        requests: 5,
        window: "1m",
        enabled: true,
      }],
    },
  });
  assertEquals(r.kind, "ok");
});

Deno.test("validateConfig() names the key of a bad apisec value", () => {
  const cases: Array<[unknown, string]> = [
    [
      { rate_limits: [{ id: "a", method: "GET", path_pattern: "(", requests: 1, window: "1m" }] },
      "apisec.rate_limits[0].path_pattern",
    ],
    [
      {
        rate_limits: [{ id: "a", method: "GET", path_pattern: "^/", requests: 1, window: "soon" }],
      },
      "apisec.rate_limits[0].window",
    ],
    [
      {
        rate_limits: [{ id: "a", method: "FETCH", path_pattern: "^/", requests: 1, window: "1m" }],
      },
      "apisec.rate_limits[0].method",
    ],
    [{
      validation: {
        enabled: true,
        schemas: [{ id: "a", method: "GET", path_pattern: "^/", extra: 1 }],
      },
    }, "apisec.validation.schemas[0]"],
    [{ validation: { enabled: "yes" } }, "apisec.validation.enabled"],
    [{ auth: { enabled: true, algorithms: ["HS256"] } }, "apisec.auth.secret"],
    [{ auth: { enabled: true, algorithms: ["RS256"] } }, "apisec.auth.algorithms"],
    [{ auth: { enabled: true, algorithms: ["none"], secret: "s" } }, "apisec.auth.algorithms[0]"],
    [{ auth: { jwks_refresh_interval: "often" } }, "apisec.auth.jwks_refresh_interval"],
    [{ auth: { require_exp: "yes" } }, "apisec.auth.require_exp"],
  ];
  for (const [apisec, path] of cases) {
    const r = validateConfig({ apisec });
    assertEquals(r.kind, "invalid", path);
    const problems = r.kind === "invalid" ? r.problems : [];
    ok(problems.some((p) => p.path.startsWith(path)), `${path}: ${JSON.stringify(problems)}`);
  }
});

Deno.test("apisec.auth.require_exp defaults to true: a JWT without exp is refused unless set false", () => {
  assertEquals(authInputSchema.parse({}).require_exp, true);
  assertEquals(authInputSchema.parse({ require_exp: false }).require_exp, false);
  const r = validateConfig({ apisec: { auth: { require_exp: false } } });
  assertEquals(r.kind, "ok");
});
