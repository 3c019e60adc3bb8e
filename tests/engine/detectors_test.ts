import assert from "node:assert/strict";
import { DETECTORS } from "../../engine/detectors.ts";
import { ldapXpath } from "../../engine/ldap_xpath.ts";
import { MAX_TEXT } from "../../engine/limits.ts";
import { nosqli } from "../../engine/nosqli.ts";
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

Deno.test("LDAP, XPath and NoSQL patterns read a window of repeated syntax in one pass", () => {
  // Each shape below cost quadratic time in one pattern of the detectors (about 2 s a 16 KiB
  // window on this machine): a run of `)` (a class holding `)` after `\)`), `)(` or a quote
  // before spaces (`\s*X?\s*`), a long word under a query container (`\w*` from every letter),
  // spaces after a GraphQL variable (`\s*\[*\s*`). Linear patterns judge them in milliseconds,
  // so the whole set stays a small part of this file's run; the results are checked too.
  const n = MAX_TEXT;
  const shapes: Array<[string, string, string | undefined]> = [
    ["ldap", ")".repeat(n - 1) + "(", undefined],
    ["ldap", ")(" + " ".repeat(n - 3) + "|", undefined],
    ["ldap", "x)(" + " ".repeat(n - 4) + "|", undefined],
    ["ldap", ")".repeat(n - 8) + "(|(uid=*", "ldap"],
    ["xpath", "'" + " ".repeat(n - 2) + "|", undefined],
    ["nosqli", '{"$gt":1,"' + "a".repeat(n - 12) + '"', "nosqli"],
    ["nosqli", "query ($where:" + " ".repeat(n - 15) + "|", "nosqli"],
  ];
  for (const [cls, text, expected] of shapes) {
    const detector = cls === "nosqli" ? nosqli : ldapXpath;
    const name = cls === "nosqli" ? "filter" : "q";
    const f = detector(engineInput(text, { name }));
    assert.equal(f?.class, expected, text.slice(0, 20));
  }
});
