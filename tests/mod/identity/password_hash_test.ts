import { assertEquals, assertMatch, notEqual, ok } from "../../_helpers/assert.ts";
import {
  constantTimeEqual,
  DUMMY_HASH,
  hashPassword,
  needsRehash,
  PBKDF2_ITERATIONS,
  verifyPassword,
} from "../../../mod/identity/password_hash.ts";

Deno.test("hashPassword() encodes PBKDF2-SHA256 with 600,000 iterations and a 16-byte salt", async () => {
  const h = await hashPassword("Correct-Horse-9");
  assertMatch(h, /^pbkdf2-sha256\$600000\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  assertEquals(PBKDF2_ITERATIONS, 600_000);
  ok(!h.includes("Correct-Horse-9"));
});

Deno.test("hashPassword() salts: the same password hashes differently each time", async () => {
  notEqual(await hashPassword("Correct-Horse-9"), await hashPassword("Correct-Horse-9"));
});

Deno.test("verifyPassword() accepts the right password and refuses any other", async () => {
  const h = await hashPassword("Correct-Horse-9");
  ok(await verifyPassword("Correct-Horse-9", h));
  ok(!(await verifyPassword("correct-Horse-9", h)));
  ok(!(await verifyPassword("Correct-Horse-9 ", h)));
  ok(!(await verifyPassword("", h)));
});

Deno.test("verifyPassword() never matches a malformed hash or the dummy hash", async () => {
  for (const bad of ["", "plain", "pbkdf2-sha256$x$y$z", "md5$1$aa$bb", "pbkdf2-sha256$0$AA$AA"]) {
    ok(!(await verifyPassword("anything", bad)), bad);
  }
  ok(!(await verifyPassword("", DUMMY_HASH)));
});

Deno.test("needsRehash() asks for a rehash of weaker hashes", async () => {
  ok(!needsRehash(await hashPassword("Correct-Horse-9")));
  ok(needsRehash("pbkdf2-sha256$1000$AAAAAAAAAAAAAAAAAAAAAA$AAAA"));
});

Deno.test("constantTimeEqual() compares content and length", () => {
  ok(constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3])));
  ok(!constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4])));
  ok(!constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3, 1])));
});

Deno.test("password derivations run one at a time, so a burst of logins cannot take every core", async () => {
  const original = crypto.subtle.deriveBits;
  let running = 0;
  let most = 0;
  crypto.subtle.deriveBits = async function (this: SubtleCrypto, ...args) {
    running++;
    most = Math.max(most, running);
    try {
      return await original.apply(this, args);
    } finally {
      running--;
    }
  } as typeof original;
  try {
    const hashes = await Promise.all(
      ["Correct-Horse-1", "Correct-Horse-2", "Correct-Horse-3"].map((p) => hashPassword(p)),
    );
    assertEquals(most, 1);
    assertEquals(await verifyPassword("Correct-Horse-2", hashes[1]!), true);
  } finally {
    crypto.subtle.deriveBits = original;
  }
});
