import assert from "node:assert/strict";
import { analyzeXss, xss } from "../../engine/xss.ts";
import { normalize } from "../../engine/normalize.ts";

const cases = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/engine/xss.json", import.meta.url)),
) as { attack: unknown[]; benign: unknown[] };

const BLOCKS = 70;

Deno.test("xss() blocks every attack of the data file once decoded", () => {
  for (const attack of cases.attack.filter((c): c is string => typeof c === "string")) {
    const decoded = normalize(attack).text;
    const verdict = analyzeXss(decoded);
    assert.ok(verdict !== undefined && verdict.score >= BLOCKS, `not blocked: ${attack}`);
  }
});

Deno.test("xss() lets every benign look-alike of the data file pass", () => {
  for (const text of cases.benign.filter((c): c is string => typeof c === "string")) {
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

/** Runs the detector the way inspect() does: decoded text beside the raw value. */
function detect(source: "query" | "json" | "header" | "cookie", raw: string) {
  const plus = source === "query" ? "space" : "literal";
  return xss({
    input: { source, name: "q", value: raw },
    location: `${source}:q`,
    decoded: normalize(raw, plus).text,
    raw,
  });
}

Deno.test("xss() blocks a lone < spelled in an encoding the transport does not need", () => {
  for (const raw of ["&#x003C;", "&#0000060", "\\x3c", "\\u003C", "&LT"]) {
    assert.equal(detect("json", raw)?.ruleId, "xss.encoded_delimiter", raw);
  }
  assert.equal(detect("query", "%253C")?.ruleId, "xss.encoded_delimiter");
  assert.equal(detect("query", "%26lt%3B")?.ruleId, "xss.encoded_delimiter");
});

Deno.test("xss() lets a search for < or > pass when only the transport encoded it", () => {
  assert.equal(detect("query", "%3C"), undefined);
  assert.equal(detect("query", "%3E"), undefined);
  assert.equal(detect("json", "<"), undefined);
  assert.equal(detect("header", "a &lt; b"), undefined);
});

Deno.test("xss() blocks markup spelled in UTF-7 but not base64 that happens to hold +AD", () => {
  const finding = detect("header", "+ADw-p+AD4-Welcome+ADw-/p+AD4-");
  assert.equal(finding?.ruleId, "xss.utf7_markup");
  assert.equal(detect("cookie", "c2Vzc2lvbg+ADwq9fZk=="), undefined);
});

Deno.test("xss() reads CSS escapes that the JavaScript decoder would take for octal", () => {
  const raw = '<div style="background:\\0075\\0072\\006c(javascript:alert(1))">';
  assert.equal(detect("json", raw)?.ruleId, "xss.style_script");
  assert.equal(
    detect("query", encodeURIComponent('<div style="\\63olor:red">x</div>'))?.ruleId,
    "xss.css_escape",
  );
});

Deno.test("xss() reads markup whose eighth bit a US-ASCII page would drop", () => {
  assert.equal(
    detect("json", "\u00bcscript\u00bealert(1)\u00bc/script\u00be")?.ruleId,
    "xss.script",
  );
});

Deno.test("xss() skips the injection vocabulary in JSX but still sees its handlers", () => {
  const jsx = '<Form onFinish={save}><Input name="password" /></Form>';
  assert.ok((detect("json", jsx)?.score ?? 0) < BLOCKS);
  const handler = detect("json", "<Form onClick=alert(1)>");
  assert.ok((handler?.score ?? 0) >= BLOCKS);
});
