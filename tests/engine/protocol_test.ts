import assert from "node:assert/strict";
import { checkProtocol } from "../../engine/protocol.ts";

Deno.test("checkProtocol() judges every Host value, also after a valid one", () => {
  assert.equal(checkProtocol("GET", [["host", ""]])?.ruleId, "host.invalid");
  assert.equal(checkProtocol("GET", [["host", "shop.example"]]), undefined);
  assert.equal(checkProtocol("GET", [["host", "shop.example"]]), undefined);
  assert.equal(checkProtocol("GET", [["host", "shop.example/x"]])?.ruleId, "host.invalid");
  assert.equal(checkProtocol("GET", [["host", ""]])?.ruleId, "host.invalid");
  assert.equal(checkProtocol("GET", [["host", "shop.example:8080"]]), undefined);
  assert.equal(
    checkProtocol("GET", [["host", "shop.example:8080"], ["host", "shop.example:8080"]])?.ruleId,
    "host.invalid",
  );
});

Deno.test("checkProtocol() passes GET and POST and still judges every other method", () => {
  assert.equal(checkProtocol("GET", []), undefined);
  assert.equal(checkProtocol("POST", []), undefined);
  assert.equal(checkProtocol("PROPFIND", []), undefined);
  assert.equal(checkProtocol("get", [])?.ruleId, "method.invalid");
  assert.equal(checkProtocol("GET ", [])?.ruleId, "method.invalid");
  assert.equal(checkProtocol("TRACE", [])?.ruleId, "method.refused");
});
