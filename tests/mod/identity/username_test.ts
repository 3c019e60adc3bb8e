import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { validateUsername } from "../../../mod/identity/username.ts";

function refused(name: string): string {
  const r = validateUsername(name);
  if (r.ok) throw new Error(`expected ${JSON.stringify(name)} to be refused`);
  return r.reason;
}

Deno.test("validateUsername() accepts names that follow every rule", () => {
  for (const name of ["admin", "abc", "a.b", "ops_team-2", "Z9z", "a".repeat(32), "A1.b_c-D"]) {
    assertEquals(validateUsername(name), { ok: true }, name);
  }
});

Deno.test("validateUsername() refuses names shorter than 3 or longer than 32 characters", () => {
  assertMatch(refused(""), /3 to 32/);
  assertMatch(refused("ab"), /3 to 32.*got 2/);
  assertMatch(refused("a".repeat(33)), /got 33/);
});

Deno.test("validateUsername() refuses a first character that is not an ASCII letter", () => {
  for (const name of ["1abc", "_abc", ".abc", "-abc"]) assertMatch(refused(name), /start/);
});

Deno.test("validateUsername() refuses a last character that is not an ASCII letter or digit", () => {
  for (const name of ["abc.", "abc_", "abc-"]) assertMatch(refused(name), /end/);
});

Deno.test("validateUsername() refuses characters outside letters, digits, '.', '_' and '-'", () => {
  for (const name of ["a/bc", "a@bc", "a:bc", "a*bc", "a+bc", "a'bc", "a\\bc"]) {
    assertMatch(refused(name), /only ASCII letters/, name);
  }
});

Deno.test("validateUsername() refuses leading, trailing and embedded spaces without trimming", () => {
  assertMatch(refused(" admin"), /whitespace character U\+0020/);
  assertMatch(refused("admin "), /whitespace character U\+0020/);
  assertMatch(refused("ad min"), /whitespace character U\+0020/);
  assertMatch(refused("\tadmin"), /whitespace character U\+0009/);
});

Deno.test("validateUsername() refuses Unicode whitespace such as U+00A0 and U+2003", () => {
  for (const cp of [0x00a0, 0x2003, 0x2028, 0x3000, 0x1680, 0x202f]) {
    const ch = String.fromCodePoint(cp);
    for (const name of [`${ch}admin`, `admin${ch}`, `ad${ch}min`]) {
      assertMatch(refused(name), /whitespace/, `U+${cp.toString(16)}`);
    }
  }
});

Deno.test("validateUsername() refuses control (Cc) and format (Cf) characters such as U+200B and U+FEFF", () => {
  assertMatch(refused("ad\u200bmin"), /control or format character U\+200B/);
  assertMatch(refused("\u200badmin"), /U\+200B/);
  // U+FEFF is also whitespace to JavaScript; either way it is refused and named.
  assertMatch(refused("admin\ufeff"), /U\+FEFF/);
  assertMatch(refused("ad\u0000min"), /control or format character U\+0000/);
  assertMatch(refused("ad\u007fmin"), /U\+007F/);
  assertMatch(refused("ad\u200dmin"), /U\+200D/);
  assertMatch(refused("ad\u00admin"), /U\+00AD/);
  assertMatch(refused("admin\u0085"), /U\+0085/);
});

Deno.test("validateUsername() refuses non-ASCII letters and look-alikes", () => {
  assertMatch(refused("\u0430dmin"), /non-ASCII character U\+0430/); // Cyrillic a
  assertMatch(refused("adm\u00efn"), /U\+00EF/);
  assertMatch(refused("admin\u{1F600}"), /U\+1F600/);
});

Deno.test("validateUsername() never echoes the raw character in its reason", () => {
  const reason = refused("ad\u200bmin");
  ok(!reason.includes("\u200b"));
});
