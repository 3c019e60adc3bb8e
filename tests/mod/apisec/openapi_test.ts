import { assertEquals, assertThrows, ok } from "../../_helpers/assert.ts";
import { AppError } from "../../../mod/core/errors.ts";
import { importOpenApi, parseOpenApiText, pathPattern } from "../../../mod/apisec/openapi.ts";
import { compileBodySchema } from "../../../mod/apisec/json_schema.ts";

const DOC_30 = `
openapi: 3.0.3
info: { title: shop, version: "1" }
servers: [{ url: "https://api.example.com/v1" }]
x-max-body-bytes: 4096
paths:
  /orders/{orderId}:
    parameters:
      - { name: orderId, in: path, required: true, schema: { type: integer } }
    get:
      operationId: getOrder
      parameters:
        - { name: X-Tenant, in: header, required: true, schema: { type: string } }
        - { name: Authorization, in: header, required: true, schema: { type: string } }
        - { $ref: "#/components/parameters/Fields" }
    put:
      operationId: replaceOrder
      x-max-body-bytes: 512
      requestBody:
        required: true
        content:
          application/json:
            schema: { $ref: "#/components/schemas/Order" }
  /legacy:
    post:
      deprecated: true
      responses: {}
components:
  parameters:
    Fields: { name: fields, in: query, required: true, schema: { type: string } }
  schemas:
    Order:
      type: object
      required: [sku, qty]
      properties:
        sku: { type: string }
        qty: { type: integer, minimum: 1 }
        note: { type: string, nullable: true }
`;

Deno.test("pathPattern() turns a template into an anchored expression under the base path", () => {
  assertEquals(
    pathPattern("/v1", "/users/{id}/files/{name}.json"),
    "^/v1/users/[^/]+/files/[^/]+\\.json$",
  );
  assertEquals(pathPattern("", "/a+b"), "^/a\\+b$");
});

Deno.test("importOpenApi() maps operations to schema entries: parameters, headers, body limits, JSON body schemas with references and nullable", () => {
  const { entries, skipped } = importOpenApi(parseOpenApiText(DOC_30));
  assertEquals(skipped, []);
  assertEquals(entries.map((e) => [e.id, e.method, e.path_pattern, e.enabled]), [
    ["getOrder", "GET", "^/v1/orders/[^/]+$", true],
    ["replaceOrder", "PUT", "^/v1/orders/[^/]+$", true],
    ["post-legacy", "POST", "^/v1/legacy$", false],
  ]);
  const [get, put] = entries;
  assertEquals(get!.required_params, ["fields"]);
  assertEquals(get!.required_headers, ["x-tenant"]);
  assertEquals([get!.max_body_bytes, put!.max_body_bytes], [4096, 512]);
  assertEquals(get!.body_schema, null);
  const v = compileBodySchema(put!.body_schema!);
  if (!v.ok) throw new Error(v.message);
  assertEquals(v.validate({ sku: "A", qty: 2, note: null }), []);
  assertEquals(v.validate({ sku: "A", qty: 0 }), [{ path: "/qty", message: "must be >= 1" }]);
  assertEquals(v.validate({ qty: 1 }), [{
    path: "",
    message: "must have required property 'sku'",
  }]);
});

Deno.test("importOpenApi() refuses what is not an OpenAPI 3.0 or 3.1 document", () => {
  assertThrows(() => importOpenApi(parseOpenApiText('{"swagger": "2.0", "paths": {}}')));
  assertThrows(() => parseOpenApiText("- a\n- b"));
  assertThrows(() => importOpenApi(parseOpenApiText('{"openapi": "3.1.0"}')));
});

Deno.test("parseOpenApiText() says where a JSON document is malformed: 400 with line and column", () => {
  let caught: unknown;
  try {
    parseOpenApiText('{"openapi": "3.0.3",\n  "paths": {"/a": x}}');
  } catch (err) {
    caught = err;
  }
  ok(caught instanceof AppError, String(caught));
  assertEquals([caught.status, caught.code], [400, "BAD_REQUEST"]);
  assertEquals(
    caught.message,
    'Invalid OpenAPI document: not JSON at line 2, column 19: unexpected "x", expected a value',
  );
  assertEquals(caught.details, { field: "(body)", line: 2, column: 19 });
});
