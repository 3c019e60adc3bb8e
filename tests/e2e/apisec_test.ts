/**
 * API security on a running server: settings written through `/api/apisec/config` reach the
 * data plane at once (route limits, schema validation in block and monitor mode), the schema
 * tester answers without sending anything upstream, and `waf.yaml`'s blocks seed the store.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, callJson, completeSetup, createUser, login } from "../_helpers/identity.ts";
import { addSite, apiFor, hit, steps, testGuard } from "../_helpers/protection.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { createManagementApp } from "../../routes/api/management.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { re2Stats } from "../../engine/re2.ts";

const ORDERS_SCHEMA = {
  id: "create-order",
  method: "POST",
  path_pattern: "^/api/orders$",
  required_params: ["sku"],
  required_headers: ["X-Api-Key"],
  max_body_bytes: 64,
  enabled: true,
};

Deno.test("a route limit of N per window lets exactly N requests through per client; other routes and clients are untouched", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const put = await api("PUT", "/api/apisec/config", {
    rate_limits: [{
      id: "login",
      method: "post",
      path_pattern: "^/login$",
      requests: 3,
      window: "1m",
    }],
  });
  assertEquals(put.status, 200);
  const post = { init: { method: "POST", body: "x" }, ip: "198.51.100.7" };
  const statuses = [];
  for (let i = 0; i < 5; i++) statuses.push((await hit(s, "/login", post)).status);
  assertEquals(statuses, [200, 200, 200, 429, 429]);
  const limited = await hit(s, "/login", post);
  assertEquals(limited.status, 429);
  ok(Number(limited.headers.get("retry-after")) >= 1);
  assertEquals(steps(limited).at(-1), "api_rate_limit:limited:login");
  assertEquals(limited.action, "block");
  // Another method, another path, another client: not counted by this entry.
  assertEquals((await hit(s, "/login", { ip: "198.51.100.7" })).status, 200);
  assertEquals((await hit(s, "/login/help", post)).status, 200);
  assertEquals((await hit(s, "/login", { ...post, ip: "198.51.100.8" })).status, 200);
  // Two windows later the client may send again.
  s.clock.advance(120_000);
  assertEquals((await hit(s, "/login", post)).status, 200);
  // Disabling the entry through the API applies to the next request.
  await api("PUT", "/api/apisec/config", {
    rate_limits: [{
      id: "login",
      method: "POST",
      path_pattern: "^/login$",
      requests: 1,
      window: "1m",
      enabled: false,
    }],
  });
  for (let i = 0; i < 4; i++) assertEquals((await hit(s, "/login", post)).status, 200);
});

Deno.test("schema validation blocks a request missing a required header, parameter or over the body limit, with class api_schema in the access log", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  // Off by default: the schema is stored but validation is not enabled yet.
  await api("PUT", "/api/apisec/config", { validation: { schemas: [ORDERS_SCHEMA] } });
  const bare = { init: { method: "POST", body: "{}" } };
  assertEquals((await hit(s, "/api/orders", bare)).status, 200);

  assertEquals(
    (await api("PUT", "/api/apisec/config", {
      validation: { enabled: true, schemas: [ORDERS_SCHEMA] },
    })).status,
    200,
  );
  const missing = await hit(s, "/api/orders", bare);
  assertEquals(missing.status, 403);
  assertEquals(steps(missing).at(-1), "api_schema:block:create-order");
  assertEquals(missing.finding?.class, "api_schema");
  assertEquals(missing.finding?.rule, "create-order");
  assertEquals(
    missing.finding?.evidence,
    'missing header "x-api-key"; missing parameter "sku"',
  );
  const seen = up.seen.length;

  const json = {
    method: "POST",
    headers: { "x-api-key": "k", "content-type": "application/json" },
  };
  assertEquals(
    (await hit(s, "/api/orders", { init: { ...json, body: '{"sku":"A1"}' } })).status,
    200,
  );
  assertEquals(up.seen.length, seen + 1);
  assertEquals((await hit(s, "/api/orders?sku=A1", { init: { ...json, body: "{}" } })).status, 200);
  const form = {
    method: "POST",
    headers: { "x-api-key": "k", "content-type": "application/x-www-form-urlencoded" },
    body: "sku=A1",
  };
  assertEquals((await hit(s, "/api/orders", { init: form })).status, 200);
  const big = await hit(s, "/api/orders", {
    init: { ...json, body: JSON.stringify({ sku: "A1", note: "x".repeat(100) }) },
  });
  assertEquals(big.status, 413);
  assertEquals(steps(big).at(-1), "api_schema:exceeded:create-order");
  assertEquals(big.finding?.class, "api_schema");
  // Another path or method is not covered by the entry.
  assertEquals((await hit(s, "/api/orders", {})).status, 200);
  assertEquals((await hit(s, "/api/orders/1", bare)).status, 200);
});

Deno.test("a site in monitor mode only logs a schema violation", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { mode: "monitor" });
  const api = apiFor(s);
  await api("PUT", "/api/apisec/config", {
    validation: { enabled: true, schemas: [ORDERS_SCHEMA] },
  });
  const h = await hit(s, "/api/orders", { init: { method: "POST", body: "{}" } });
  assertEquals(h.status, 200);
  assertEquals(h.action, "log");
  ok(steps(h).includes("api_schema:log:create-order"));
  assertEquals(h.finding?.class, "api_schema");
});

Deno.test("POST /api/apisec/validate names the matching schema and each violation without sending anything upstream", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  await api("PUT", "/api/apisec/config", {
    validation: { enabled: true, schemas: [ORDERS_SCHEMA] },
  });
  const check = async (body: unknown) => {
    const r = await api("POST", "/api/apisec/validate", body, "read:apisec");
    assertEquals(r.status, 200);
    return await r.json();
  };
  assertEquals(await check({ method: "post", path: "/api/orders", body: { note: "n" } }), {
    schema: "create-order",
    valid: false,
    violations: [
      {
        code: "missing_header",
        location: "header:x-api-key",
        detail: 'missing header "x-api-key"',
      },
      { code: "missing_param", location: "param:sku", detail: 'missing parameter "sku"' },
    ],
  });
  assertEquals(
    await check({
      method: "POST",
      path: "/api/orders",
      headers: { "X-Api-Key": "k" },
      query: { sku: "A1" },
    }),
    { schema: "create-order", valid: true, violations: [] },
  );
  const tooBig = await check({
    method: "POST",
    path: "/api/orders?sku=1",
    headers: { "x-api-key": "k" },
    body: "y".repeat(65),
  });
  assertEquals(tooBig.violations.map((v: { code: string }) => v.code), ["body_too_large"]);
  assertEquals(await check({ method: "GET", path: "/other" }), {
    schema: null,
    valid: true,
    violations: [],
  });
  assertEquals(up.seen.length, 0);
  const bad = await api("POST", "/api/apisec/validate", { method: "POST" }, "read:apisec");
  assertEquals(bad.status, 400);
  assertEquals((await bad.json()).error.code, "BAD_REQUEST");
});

Deno.test("the settings API: readonly reads, writes need write:protection with CSRF, bad patterns and unknown sites are refused, changes are audited", async () => {
  await using s = await startTestServer();
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  await createUser(s, "viewer", "Glacier-Moth-42", "readonly");
  const viewer = await login(s, "viewer", "Glacier-Moth-42");
  const doc = {
    rate_limits: [{ id: "a", method: "GET", path_pattern: "^/a", requests: 1, window: "1s" }],
  };

  assertEquals((await callJson(s, "GET", "/api/apisec/config", { session: viewer })).status, 200);
  assertEquals(
    (await callJson(s, "PUT", "/api/apisec/config", { session: viewer, body: doc })).status,
    403,
  );
  assertEquals(
    (await callJson(s, "PUT", "/api/apisec/config", { session: admin, body: doc, csrf: false }))
      .status,
    403,
  );
  const badRe = await callJson(s, "PUT", "/api/apisec/config", {
    session: admin,
    body: { rate_limits: [{ ...doc.rate_limits[0], path_pattern: "^(?=x)" }] },
  });
  assertEquals(badRe.status, 400, JSON.stringify(badRe.body));
  assertEquals(
    (badRe.body.error as { field: string }).field,
    "rate_limits[0].path_pattern",
  );
  const badSite = await callJson(s, "PUT", "/api/apisec/config", {
    session: admin,
    body: { rate_limits: [{ ...doc.rate_limits[0], site_id: "nope" }] },
  });
  assertEquals(badSite.status, 400);
  const dup = await callJson(s, "PUT", "/api/apisec/config", {
    session: admin,
    body: { rate_limits: [doc.rate_limits[0], doc.rate_limits[0]] },
  });
  assertEquals(dup.status, 400);
  const okPut = await callJson(s, "PUT", "/api/apisec/config", { session: admin, body: doc });
  assertEquals(okPut.status, 200);
  const read = await callJson(s, "GET", "/api/apisec/config", { session: viewer });
  assertEquals((read.body.rate_limits as unknown[]).length, 1);
  assertEquals(read.body.validation, { enabled: false, schemas: [] });
  const audit = await callJson(s, "GET", "/api/audit?action=apisec.config.update", {
    session: admin,
  });
  const items = audit.body["items"] as Array<{ actor: { name: string } }>;
  assertEquals(items.map((i) => i.actor.name), ["admin"]);
});

Deno.test("waf.yaml's apisec blocks seed the store at start; an API change stands until the file changes", async () => {
  await using up = startUpstream();
  const dir = await Deno.makeTempDir({ prefix: "waf-apisec-" });
  const fileLimit = { id: "f", method: "GET", path_pattern: "^/f$", requests: 1, window: "1m" };
  const discovery = { enabled: true, sample_limit: 7, ignore_prefixes: ["/static/"] };
  const config = { apisec: { rate_limits: [fileLimit], discovery } };
  {
    await using s = await startTestServer({ config, dir });
    addSite(s, up.url);
    assertEquals((await hit(s, "/f")).status, 200);
    assertEquals((await hit(s, "/f")).status, 429);
    // Every block of the file reaches the store, discovery included, and discovery samples.
    const seeded = await apiFor(s)("GET", "/api/apisec/config").then((r) => r.json());
    assertEquals(seeded.discovery, discovery);
    const inventory = await apiFor(s)("GET", "/api/apisec/endpoints").then((r) => r.json());
    assertEquals(inventory.discovery_enabled, true);
    assertEquals(inventory.items.map((e: { template: string }) => e.template), ["/f"]);
    await apiFor(s)("PUT", "/api/apisec/config", { rate_limits: [] });
    assertEquals((await hit(s, "/f")).status, 200);
  }
  {
    // Same file: the API's change stands.
    await using s = await startTestServer({ config, dir });
    assertEquals(
      (await apiFor(s)("GET", "/api/apisec/config").then((r) => r.json())).rate_limits,
      [],
    );
  }
  {
    await using s = await startTestServer({
      config: { apisec: { rate_limits: [{ ...fileLimit, requests: 2 }] } },
      dir,
    });
    const doc = await apiFor(s)("GET", "/api/apisec/config").then((r) => r.json());
    assertEquals(doc.rate_limits[0].requests, 2);
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("discovery samples live traffic into the inventory (ignored paths skipped, sample_limit per window), flags shadow endpoints and coverage, and survives a restart", async () => {
  await using up = startUpstream();
  const dir = await Deno.makeTempDir({ prefix: "waf-apisec-" });
  {
    await using s = await startTestServer({ dir });
    addSite(s, up.url);
    const api = apiFor(s);
    const put = await api("PUT", "/api/apisec/config", {
      discovery: { enabled: true, sample_limit: 6, ignore_prefixes: ["/static/", "*.css"] },
      validation: {
        enabled: true,
        schemas: [{ id: "orders", method: "POST", path_pattern: "^/api/orders/[0-9]+$" }],
      },
    });
    assertEquals(put.status, 200);
    const json = { "content-type": "application/json" };
    await hit(s, "/api/orders/17", { init: { method: "POST", headers: json, body: '{"sku":1}' } });
    await hit(s, "/api/orders/18", { init: { method: "POST", headers: json, body: '{"qty":2}' } });
    await hit(s, "/static/app.js");
    await hit(s, "/theme.css");
    await hit(s, "/api/items?page=2");
    await hit(s, "/api/items/3f2504e0-4f89-11d3-9a0c-0305e82c3301");
    for (let i = 0; i < 5; i++) await hit(s, "/api/items?page=3");
    const list = await api("GET", "/api/apisec/endpoints", undefined, "read:apisec");
    assertEquals(list.status, 200);
    const body = await list.json();
    const byTemplate = Object.fromEntries(
      body.items.map((e: { template: string }) => [e.template, e]),
    );
    assertEquals(Object.keys(byTemplate).sort(), [
      "/api/items",
      "/api/items/{id}",
      "/api/orders/{id}",
    ]);
    const orders = byTemplate["/api/orders/{id}"];
    assertEquals(orders.methods, { POST: 2 });
    assertEquals(orders.body_params.sort(), ["qty", "sku"]);
    assertEquals(orders.content_types, ["application/json"]);
    assertEquals(orders.covered, { schema: "orders", auth: null });
    assertEquals(orders.shadow, false);
    assertEquals(byTemplate["/api/items"].query_params, ["page"]);
    assertEquals(byTemplate["/api/items"].shadow, true);
    // Six samples in this minute (two ignored paths not counted), whatever was sent after.
    assertEquals(body.items.reduce((n: number, e: { hits: number }) => n + e.hits, 0), 6);
    const shadows = await api(
      "GET",
      "/api/apisec/endpoints?shadow=true&limit=1",
      undefined,
      "read:apisec",
    )
      .then((r) => r.json());
    assertEquals([shadows.total, shadows.items.length], [2, 1]);
    const bad = await api("GET", "/api/apisec/endpoints?limit=0", undefined, "read:apisec");
    assertEquals(bad.status, 400);
  }
  {
    await using s = await startTestServer({ dir });
    const body = await apiFor(s)("GET", "/api/apisec/endpoints?q=orders").then((r) => r.json());
    assertEquals(body.items.map((e: { template: string }) => e.template), ["/api/orders/{id}"]);
    assertEquals((await apiFor(s)("DELETE", "/api/apisec/endpoints")).status, 204);
    const after = await apiFor(s)("GET", "/api/apisec/endpoints").then((r) => r.json());
    assertEquals(after.total, 0);
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("replacing the settings releases the RE2 expressions of the settings replaced", async () => {
  await using s = await startTestServer();
  const api = apiFor(s);
  const limit = (n: number) => ({
    rate_limits: [{
      id: "r",
      method: "GET",
      path_pattern: `^/released-${n}-[a-z]+$`,
      requests: 1,
      window: "1m",
    }],
  });
  const before = re2Stats().patterns;
  await api("PUT", "/api/apisec/config", limit(1));
  assertEquals(re2Stats().patterns, before + 1);
  for (let n = 2; n < 6; n++) await api("PUT", "/api/apisec/config", limit(n));
  assertEquals(re2Stats().patterns, before + 1, "only the settings in force hold an expression");
  await api("PUT", "/api/apisec/config", {});
  assertEquals(re2Stats().patterns, before);
});

const SHOP_YAML = `
openapi: 3.1.0
info: { title: shop, version: "1" }
paths:
  /api/orders:
    post:
      operationId: createOrder
      parameters:
        - { name: X-Api-Key, in: header, required: true, schema: { type: string } }
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [sku, qty]
              properties:
                sku: { type: string }
                qty: { type: integer, minimum: 1 }
  /api/orders/{id}:
    get:
      operationId: getOrder
`;

/** Sends a raw text body to the in-process management routes with every permission. */
function rawApi(s: TestServer, path: string, body: string, type: string): Promise<Response> {
  const app = createManagementApp({
    logger: createMemoryLogger(),
    random: systemRandom,
    routes: s.dataPlane.routes,
    guard: testGuard,
  });
  return Promise.resolve(app.request(path, {
    method: "POST",
    headers: { "content-type": type, "x-test-permissions": "*" },
    body,
  }, { remoteAddr: { hostname: "127.0.0.1", port: 1 } }));
}

Deno.test("an OpenAPI document (YAML) imported through the API validates JSON bodies in the data plane and marks undocumented endpoints as shadow APIs", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  await api("PUT", "/api/apisec/config", {
    discovery: { enabled: true },
    validation: { enabled: true, schemas: [] },
  });
  const imported = await rawApi(s, "/api/apisec/openapi", SHOP_YAML, "application/yaml");
  assertEquals(imported.status, 200);
  const result = await imported.json();
  assertEquals(result.imported, ["createOrder", "getOrder"]);
  assertEquals(result.validation.schemas[0].path_pattern, "^/api/orders$");

  const post = (body: string) => ({
    init: {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "k" },
      body,
    },
  });
  assertEquals((await hit(s, "/api/orders", post('{"sku":"A","qty":2}'))).status, 200);
  const invalid = await hit(s, "/api/orders", post('{"sku":"A","qty":0}'));
  assertEquals(invalid.status, 403);
  assertEquals(steps(invalid).at(-1), "api_schema:block:createOrder");
  assertEquals(invalid.finding?.evidence, "body/qty must be >= 1");
  assertEquals((await hit(s, "/api/orders", post("not json"))).status, 403);
  await hit(s, "/api/orders/7");
  await hit(s, "/api/internal/debug");

  const shadows = await api("GET", "/api/apisec/endpoints?shadow=true").then((r) => r.json());
  assertEquals(shadows.items.map((e: { template: string }) => e.template), ["/api/internal/debug"]);

  // The tester sees the same schema; a replace import drops what was there.
  const tested = await api("POST", "/api/apisec/validate", {
    method: "POST",
    path: "/api/orders",
    headers: { "x-api-key": "k" },
    body: { sku: 5, qty: 1 },
  }).then((r) => r.json());
  assertEquals(tested.violations, [{
    code: "body_schema",
    location: "body/sku",
    detail: "body/sku must be string",
  }]);
  const replaced = await rawApi(
    s,
    "/api/apisec/openapi?mode=replace",
    JSON.stringify({ openapi: "3.0.3", paths: { "/ping": { get: { operationId: "ping" } } } }),
    "application/json",
  ).then((r) => r.json());
  assertEquals(replaced.validation.schemas.map((e: { id: string }) => e.id), ["ping"]);
  const refused = await rawApi(s, "/api/apisec/openapi", "swagger: '2.0'", "application/yaml");
  assertEquals(refused.status, 400);
  const audit = s.db.prepare(
    "SELECT count(*) AS n FROM audit_log WHERE action = 'apisec.openapi.update'",
  )
    .get() as { n: number };
  assertEquals(audit.n, 2);
});
