import assert from "node:assert/strict";
import { crlf } from "../../engine/crlf.ts";
import { engineInput } from "../_helpers/engine_input.ts";

Deno.test("crlf() catches a line break followed by an injected header", () => {
  for (
    const p of ["/\r\nSet-Cookie: a=b", "x\nLocation: http://evil", "x\u560a\u560dSet-Cookie: a=1"]
  ) {
    assert.ok((crlf(engineInput(p))?.score ?? 0) >= 90, JSON.stringify(p));
  }
  assert.ok((crlf(engineInput("x%0d%0aSet-Cookie:a=b"))?.score ?? 0) >= 90);
});

Deno.test("crlf() keeps multi-line body text with header-like lines below blocking", () => {
  const f = crlf(engineInput("Meeting notes\nLocation: Berlin", { source: "json", name: "note" }));
  assert.ok((f?.score ?? 0) < 70);
  assert.equal(crlf(engineInput("line one\nline two")), undefined);
});
