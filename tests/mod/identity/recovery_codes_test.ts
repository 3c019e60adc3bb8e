/** Recovery codes: their form, how typed input is read back, and their keyed, per-account hash. */
import { assertEquals, assertMatch, notEqual } from "../../_helpers/assert.ts";
import {
  newRecoveryCodes,
  normalizeRecoveryCode,
  RECOVERY_CODE_COUNT,
  recoveryHash,
  recoveryKey,
} from "../../../mod/identity/recovery_codes.ts";
import type { Random } from "../../../mod/core/random.ts";
import { seeded } from "../../_helpers/seeded.ts";

/** A random source whose first bytes count up (0, 1, 2, ...), then follow a seeded generator. */
function counting(): Random {
  const g = seeded(36);
  let n = 0;
  return { bytes: (length) => Uint8Array.from({ length }, () => n < 12 ? n++ : g.int(256)) };
}

Deno.test("newRecoveryCodes() makes ten distinct 12-symbol codes from the injected random source", () => {
  const codes = newRecoveryCodes(counting());
  assertEquals(codes.length, RECOVERY_CODE_COUNT);
  assertEquals(new Set(codes).size, RECOVERY_CODE_COUNT);
  for (const c of codes) assertMatch(c, /^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){2}$/);
  assertEquals(codes[0], "0123-4567-89AB", "byte i is symbol i of Crockford's base32");
  assertEquals(newRecoveryCodes(counting()), codes, "nothing but the random source decides");
});

Deno.test("newRecoveryCodes() draws again when the source repeats a code", () => {
  const zeros: Random = { bytes: (length) => new Uint8Array(length) };
  let calls = 0;
  const repeating: Random = {
    bytes: (length) => calls++ < 2 ? zeros.bytes(length) : Uint8Array.from({ length }, () => calls),
  };
  const codes = newRecoveryCodes(repeating, 3);
  assertEquals(codes.length, 3);
  assertEquals(new Set(codes).size, 3);
});

Deno.test("normalizeRecoveryCode() reads a code as copied or typed by hand", () => {
  assertEquals(normalizeRecoveryCode("7KQM-2XDA-93PF"), "7KQM2XDA93PF");
  assertEquals(normalizeRecoveryCode(" 7kqm 2xda 93pf\n"), "7KQM2XDA93PF");
  assertEquals(normalizeRecoveryCode("1O1O-ILIL-0000"), "10101111" + "0000");
  assertEquals(normalizeRecoveryCode("7KQM-2XDA-93P"), undefined, "too short");
  assertEquals(normalizeRecoveryCode("7KQM-2XDA-93PFF"), undefined, "too long");
  assertEquals(normalizeRecoveryCode("7KQM-2XDA-93PU"), undefined, "U is not a symbol");
  assertEquals(normalizeRecoveryCode("123456"), undefined, "a TOTP code is not one");
});

Deno.test("recoveryHash() depends on the key and the account", () => {
  const key = recoveryKey(new Uint8Array(32).fill(7));
  assertEquals(key.length, 32);
  notEqual(key, new Uint8Array(32).fill(7), "a derived key, not the file's bytes");
  const h = recoveryHash(key, "u1", "7KQM2XDA93PF");
  assertEquals(recoveryHash(key, "u1", "7KQM2XDA93PF"), h);
  notEqual(recoveryHash(key, "u2", "7KQM2XDA93PF"), h);
  notEqual(recoveryHash(recoveryKey(new Uint8Array(32)), "u1", "7KQM2XDA93PF"), h);
});
