import assert from "node:assert/strict";
import { analyzeXss, xss } from "../../engine/xss.ts";
import { normalize } from "../../engine/normalize.ts";

const cases = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/engine/xss.json", import.meta.url)),
) as { attacks: string[]; benign: string[] };

const BLOCKS = 70;

Deno.test("xss() blocks every attack of the data file once decoded", () => {
  for (const attack of cases.attacks) {
    const decoded = normalize(attack).text;
    const verdict = analyzeXss(decoded);
    assert.ok(verdict !== undefined && verdict.score >= BLOCKS, `not blocked: ${attack}`);
  }
});

Deno.test("xss() lets every benign look-alike of the data file pass", () => {
  for (const text of cases.benign) {
    const verdict = analyzeXss(normalize(text).text);
    assert.ok(
      verdict === undefined || verdict.score < BLOCKS,
      `blocked: ${text} (${verdict?.rule})`,
    );
  }
});

Deno.test("xss() catches an event handler added by an attribute breakout", () => {
  assert.equal(analyzeXss('" autofocus onfocus="alert(1)')?.rule, "xss.event_handler");
});

Deno.test("xss() weighs scripts inside a whole HTML document below the blocking band", () => {
  const doc = "<html><head><title>t</title></head><body><div>x</div><p>y</p>" +
    "<script>init()</script></body></html>";
  const verdict = analyzeXss(doc);
  assert.ok(verdict !== undefined && verdict.score < BLOCKS);
});

Deno.test("xss() reports a finding with class, location and evidence", () => {
  const finding = xss({
    input: { source: "form", name: "comment", value: "<svg onload=alert(1)>" },
    location: "form:comment",
    decoded: "<svg onload=alert(1)>",
    raw: "<svg onload=alert(1)>",
  });
  assert.equal(finding?.class, "xss");
  assert.equal(finding?.location, "form:comment");
  assert.equal(finding?.evidence, "<svg onload=alert(1)>");
});

Deno.test("xss() never throws on hostile shapes", () => {
  for (
    const text of ["<".repeat(5000), "<a ".repeat(2000), "<!--".repeat(1000), '="'.repeat(999)]
  ) {
    analyzeXss(text);
  }
});
