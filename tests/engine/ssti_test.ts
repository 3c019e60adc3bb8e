import assert from "node:assert/strict";
import { ssti } from "../../engine/ssti.ts";
import { engineInput } from "../_helpers/engine_input.ts";

const score = (text: string) => ssti(engineInput(text))?.score ?? 0;

Deno.test("ssti() catches arithmetic probes in every delimiter", () => {
  for (const p of ["{{7*7}}", "${7*7}", "#{7*7}", "<%= 7 * 7 %>", "{{7*'7'}}", "*{7*7}"]) {
    assert.ok(score(p) >= 70, p);
  }
});

Deno.test("ssti() catches Python object traversal and engine globals", () => {
  for (
    const p of [
      "{{ ''.__class__.__mro__[2].__subclasses__() }}",
      "{{config.items()}}",
      "{{cycler.__init__.__globals__.os}}",
      "{{request|attr('application')}}",
      "{{self._TemplateReference__context}}",
    ]
  ) {
    assert.ok(score(p) >= 70, p);
  }
});

Deno.test("ssti() catches FreeMarker, Velocity, Smarty and ERB exploits", () => {
  for (
    const p of [
      '<#assign ex="freemarker.template.utility.Execute"?new()>${ex("id")}',
      "#set($x = $e.getClass())",
      "{php}echo `id`;{/php}",
      "<%= `id` %>",
    ]
  ) {
    assert.ok(score(p) >= 70, p);
  }
});

Deno.test("ssti() keeps plain template placeholders low", () => {
  for (
    const p of [
      "Hello {{name}}",
      "Total: ${price}",
      "{% raw %}",
      "Use {{ user.email }} in the mail",
    ]
  ) {
    assert.ok(score(p) < 70, p);
  }
});
