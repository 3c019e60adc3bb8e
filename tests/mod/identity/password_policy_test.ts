import { assertEquals, ok } from "../../_helpers/assert.ts";
import {
  checkPassword,
  generatePassword,
  PASSWORD_RULES,
  type PasswordRule,
} from "../../../mod/identity/password_policy.ts";
import { systemRandom } from "../../../mod/core/random.ts";

const has = (pw: string, rule: PasswordRule, user = "operator") =>
  checkPassword(pw, user).includes(rule);

Deno.test("checkPassword() accepts a long password with three classes and no pattern", () => {
  assertEquals(checkPassword("Correct-Horse-9", "admin"), []);
  assertEquals(checkPassword("river stone Lamp 82", "admin"), []);
  assertEquals(checkPassword("glacier-MOTH-basil", "admin"), []);
});

Deno.test("checkPassword() needs at least 10 characters", () => {
  ok(has("Ab1-xyQw9", "min_length"));
  ok(!has("Ab1-xyQw9z", "min_length"));
});

Deno.test("checkPassword() bounds the length so one request cannot demand unbounded hashing", () => {
  ok(has("Ab1-" + "xk9Q".repeat(70), "max_length"));
});

Deno.test("checkPassword() needs 3 of upper, lower, digits and special characters", () => {
  ok(has("lowercaseonlyhere", "character_classes"));
  ok(has("lowercase29and", "character_classes"));
  ok(!has("Lowercase29and", "character_classes"));
  ok(!has("lowercase-and-82", "character_classes"));
  ok(!has("LOWER-case-gates", "character_classes"));
});

Deno.test("checkPassword() does not count digits that are all one repeated digit", () => {
  ok(has("Riverstone77", "character_classes"));
  ok(has("Riverstone7777", "character_classes"));
  ok(!has("Riverstone72", "character_classes"));
  // A single digit is not a repetition.
  ok(!has("Riverstones7", "character_classes"));
});

Deno.test("checkPassword() refuses common passwords, also decorated or in leetspeak", () => {
  for (
    const pw of ["Password123!", "P@ssw0rd2024", "Welcome2026!", "iloveyou-X9", "Letmein!2026"]
  ) {
    ok(has(pw, "common_password"), pw);
  }
  ok(has("Dragon!!2026", "common_password"));
});

Deno.test("checkPassword() refuses alphabetic and numeric sequences such as abcdef and 123456", () => {
  ok(has("Xabcdef-Q9z", "sequence"));
  ok(has("River-123456", "sequence"));
  ok(has("River-9876-q", "sequence"));
  ok(has("River-ZYXW-q5", "sequence"));
});

Deno.test("checkPassword() refuses keyboard walks such as qwerty and asdfgh", () => {
  ok(has("Zqwerty-91x", "keyboard_walk"));
  ok(has("Pasdfgh-91x", "keyboard_walk"));
  ok(has("Mzxcvb!82kq", "keyboard_walk"));
  ok(has("Hytrewq!82k", "keyboard_walk"));
});

Deno.test("checkPassword() refuses repeated runs and repeated chunks", () => {
  ok(has("Riveraaaa-92", "repeated_run"));
  ok(has("Ab1!Ab1!Ab1!", "repeated_run"));
  ok(!has("Riveraaa-92x", "repeated_run"));
});

Deno.test("checkPassword() refuses a password equal to or containing the username, ignoring case", () => {
  ok(has("Operator-92!x", "contains_username", "operator"));
  ok(has("xx-OPERATOR-92", "contains_username", "operator"));
  ok(has("operator", "contains_username", "Operator"));
  ok(!has("Correct-Horse-9", "contains_username", "operator"));
});

Deno.test("checkPassword() lists every failed rule at once", () => {
  assertEquals(checkPassword("aaaa", "bob").sort(), [
    "character_classes",
    "min_length",
    "repeated_run",
  ]);
  for (const rule of checkPassword("qwerty", "qwerty")) ok(PASSWORD_RULES[rule]);
});

Deno.test("generatePassword() always satisfies the policy", () => {
  for (let i = 0; i < 200; i++) {
    const pw = generatePassword(systemRandom, "admin");
    assertEquals(checkPassword(pw, "admin"), [], pw);
    assertEquals(pw.length, 20);
  }
});
