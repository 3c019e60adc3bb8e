import { assertEquals } from "../../_helpers/assert.ts";
import { b64url, fromB64url, fromB64urlText } from "../../../mod/core/digest.ts";
import { randomHex } from "../../../mod/core/random.ts";

Deno.test("b64url() and fromB64url() round-trip every byte value without padding", () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  const text = b64url(all);
  assertEquals(/^[A-Za-z0-9_-]+$/.test(text), true);
  assertEquals(fromB64url(text), all);
  assertEquals(fromB64urlText(b64url(new TextEncoder().encode("héllo"))), "héllo");
});

Deno.test("fromB64url() refuses text that is not base64url", () => {
  for (const bad of ["a+b/", "ab cd", "a", "!!"]) assertEquals(fromB64url(bad), undefined, bad);
});

Deno.test("randomHex() is lower-case hex of the requested length", () => {
  const fixed = { bytes: (n: number) => Uint8Array.from({ length: n }, (_, i) => i * 17) };
  assertEquals(randomHex(fixed, 4), "00112233");
  assertEquals(randomHex(fixed).length, 32);
});
