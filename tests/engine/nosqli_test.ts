import assert from "node:assert/strict";
import { nosqli } from "../../engine/nosqli.ts";
import { engineInput } from "../_helpers/engine_input.ts";

Deno.test("nosqli() catches operators in parameter names and JSON keys", () => {
  const name = nosqli(engineInput("x", { source: "form", name: "user[$ne]" }));
  assert.ok((name?.score ?? 0) >= 70);
  const key = nosqli(engineInput("$gt", { source: "json", name: "password.$gt" }));
  assert.ok((key?.score ?? 0) >= 70);
});

Deno.test("nosqli() catches operator objects and server-side JavaScript in values", () => {
  for (
    const p of [
      "{ $ne: 1 }",
      '{"$gt": ""}',
      "', $where: '1 == 1'",
      "' && this.password.match(/.*/)//",
      "';return true;var a='",
      "';sleep(5000);",
      "db.users.find({})",
    ]
  ) {
    assert.ok((nosqli(engineInput(p))?.score ?? 0) >= 70, p);
  }
});

Deno.test("nosqli() passes prose and code that mention operators", () => {
  for (
    const p of [
      "Use $gt to compare prices",
      "the $ne operator is documented",
      "if (x) {\n  return 0;\n}",
    ]
  ) {
    assert.ok((nosqli(engineInput(p, { source: "json", name: "text" }))?.score ?? 0) < 70, p);
  }
});
