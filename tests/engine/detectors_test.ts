import assert from "node:assert/strict";
import { DETECTORS } from "../../engine/detectors.ts";
import { engineInput } from "../_helpers/engine_input.ts";

Deno.test("DETECTORS never throw and keep evidence within 120 characters", () => {
  const hostile = [
    "",
    "%",
    "\\",
    "${",
    "${${${",
    "((((((",
    "'".repeat(5000),
    "../".repeat(3000) + "etc/passwd",
    "\uffff\ud800",
    "{{" + "x".repeat(10000),
  ];
  for (const detector of DETECTORS) {
    for (const text of hostile) {
      const f = detector(engineInput(text));
      if (f !== undefined) {
        assert.ok(f.evidence.length <= 120);
        assert.ok(f.score >= 0 && f.score <= 100);
        assert.equal(f.location, "query:q");
      }
    }
  }
});
