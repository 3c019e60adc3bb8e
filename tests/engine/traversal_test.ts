import assert from "node:assert/strict";
import { traversal } from "../../engine/traversal.ts";
import { engineInput } from "../_helpers/engine_input.ts";

const score = (text: string, raw = text, name = "q") =>
  traversal(engineInput(text, { raw, name }))?.score ?? 0;

Deno.test("traversal() catches a climb to a system file", () => {
  assert.ok(score("../../../etc/passwd") >= 90);
  assert.ok(score("..\\..\\..\\windows\\win.ini") >= 90);
  assert.ok(score("/etc/passwd") >= 70);
});

Deno.test("traversal() catches encoded, overlong and unicode climbs", () => {
  assert.ok(score("../../etc/passwd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd") >= 90);
  assert.ok(score("\u00c1\u00af..", "..%c1%af..%c1%afetc%c1%afpasswd") >= 90);
  assert.ok(score("\uff0e\uff0e\u2215\uff0e\uff0e\u2215etc/passwd") >= 90);
  assert.ok(score("0x2e0x2e0x2f0x2e0x2e0x2fboot.ini") >= 90);
  assert.ok(score("/../../", "/..%252f..%252f") >= 70);
  assert.ok(score("....//....//....//etc/passwd") >= 90);
});

Deno.test("traversal() catches PHP stream wrappers and NUL truncation", () => {
  assert.ok(score("php://filter/convert.base64-encode/resource=index.php") >= 90);
  assert.ok(score("expect://id") >= 90);
  assert.ok(score("../../config.php", "../../config.php%00.jpg") >= 70);
});

Deno.test("traversal() scores depth: one climb is low, a file parameter raises two", () => {
  assert.ok(score("see ../ for the parent folder") < 40);
  assert.ok(score("../../images/logo.png") < 70);
  assert.ok(score("../../images/logo.png", "../../images/logo.png", "file") >= 70);
  assert.ok(score("../../../a/b") >= 70);
});

Deno.test("traversal() passes ordinary paths, URLs and prose", () => {
  for (
    const p of [
      "https://cdn.example.com/static/app.js",
      "/blog/2023/07/hello-world",
      "Loading... please wait...",
      "fragment CommentFragment on Comment { ...CommentWithChildren }",
      "C:\\Users\\me\\Documents\\report.docx",
    ]
  ) {
    assert.ok(score(p) < 70, p);
  }
});
