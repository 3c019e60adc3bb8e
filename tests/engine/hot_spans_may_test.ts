/**
 * The cheap pre-checks of the hot spans' scan (engine/hot_spans.ts, `May`) only skip a
 * candidate where its check cannot match: for every kind and every candidate character with
 * one, texts made of the checks' own words, punctuation and spaces are read at each candidate,
 * and wherever the pre-check says no, the check's pattern must fail there too.
 */
import assert from "node:assert/strict";
import { checkOf, type TextKind } from "../../engine/hot_spans.ts";
import { seeded } from "../_helpers/seeded.ts";

/** Pieces the texts are made of: what the checks read before and after a candidate. */
const PIECES = [
  ..."abcdefghijklmnopqrstuvwxyzABCEIOSUX0123456789_$",
  ..." \t\n\r\v\f\u00a0\u2028\u3000\ufeff",
  ...".-/@[]{}()!'\"+*%#:;=<>&|~`\\^?,\u00b4\u2018\u2019\u201c\u201d\u00e9",
  "or ",
  "and ",
  "xor ",
  "not ",
  "sh ",
  "sh,",
  "-i",
  "-c,",
  "-exec",
  "--x",
  "-o /p",
  "-ol",
  "select ",
  "union ",
  "from ",
  "where ",
  "exec",
  "like '",
  "order by 1",
  "sleep(",
  "is null",
  "java",
  "document",
  "xip.",
  ".bak",
  ".env",
  "download",
  "1.2.3.4",
  "10.0.0",
  "192.168.1.1",
  "/etc/",
  "/..",
  "/*",
  "*/",
  "//",
  "for ",
  "if ",
  "bcc:",
  "Subject:",
  "http/",
  "x-a:",
  "cc :",
  "+ADw-",
  "+AG",
  "[::1]",
  "[fe80::1]",
  "[a:b]",
  "a@b.c",
  "@@v",
  "@import",
  "!!python",
  ") union",
  ");",
  ")(",
  ") --",
  ") #",
  '\\"',
  "\\n",
  "\\r\\nto:",
  "\\u0027",
  '{"',
  "{}",
  "{ ",
  "O'Brien",
  "'a'='a",
  '" or 1=1',
  "' || ",
  "'&&",
  "'; ",
  "'--",
  "'#",
  "'/*",
  "'=",
  "'<",
  "'>",
  "'!=",
  "'(",
  "')",
  "'+",
  "'\\",
  "'|",
  "'1",
];

Deno.test("hot spans: a pre-check skips a candidate only where its check fails", () => {
  const next = seeded(33).next;
  const kinds: TextKind[] = ["text", "json", "form", "encoded"];
  let skipped = 0;
  let checked = 0;
  for (let round = 0; round < 40_000; round++) {
    let text = "";
    const parts = 1 + Math.floor(next() * 8);
    for (let k = 0; k < parts; k++) text += PIECES[Math.floor(next() * PIECES.length)];
    for (const kind of kinds) {
      for (let at = 0; at < text.length; at++) {
        const { check, may } = checkOf(kind, text.charCodeAt(at));
        if (check === null || may === null) continue;
        checked++;
        if (may(text, at)) continue;
        skipped++;
        check.lastIndex = at;
        assert.equal(check.test(text), false, `${kind} ${JSON.stringify(text)} at ${at}`);
      }
    }
  }
  // The texts reach both answers often.
  assert.ok(skipped > 50_000 && checked - skipped > 50_000, `${skipped} of ${checked}`);
});
