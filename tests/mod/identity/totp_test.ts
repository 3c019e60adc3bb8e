import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import {
  matchTotpStep,
  newTotpSecret,
  totpBase32,
  totpCode,
  totpSecretFromBase32,
  totpStep,
  totpUri,
} from "../../../mod/identity/totp.ts";
import { qrSvgDataUri } from "../../../mod/identity/qr.ts";
import { systemRandom } from "../../../mod/core/random.ts";

const RFC_SECRET = new TextEncoder().encode("12345678901234567890");

Deno.test("totpCode() matches the SHA-1 test vectors of RFC 6238 (6 digits)", () => {
  // RFC 6238 appendix B lists 8 digits; 6-digit codes are their last six.
  const vectors: [number, string][] = [
    [59, "94287082"],
    [1111111109, "07081804"],
    [1111111111, "14050471"],
    [1234567890, "89005924"],
    [2000000000, "69279037"],
    [20000000000, "65353130"],
  ];
  for (const [seconds, eight] of vectors) {
    assertEquals(totpCode(RFC_SECRET, totpStep(seconds * 1000)), eight.slice(2), `T=${seconds}`);
  }
});

Deno.test("matchTotpStep() accepts the previous, current and next step and nothing further", () => {
  const now = 1111111111_000;
  const step = totpStep(now);
  for (const delta of [-1, 0, 1]) {
    assertEquals(matchTotpStep(RFC_SECRET, totpCode(RFC_SECRET, step + delta), now), step + delta);
  }
  for (const delta of [-2, 2, 100]) {
    assertEquals(matchTotpStep(RFC_SECRET, totpCode(RFC_SECRET, step + delta), now), undefined);
  }
  for (const bad of ["", "12345", "1234567", "12 345", "abcdef", "١٢٣٤٥٦"]) {
    assertEquals(matchTotpStep(RFC_SECRET, bad, now), undefined, bad);
  }
});

Deno.test("a new secret is 160 random bits and round-trips through base32", () => {
  const a = newTotpSecret(systemRandom);
  const b = newTotpSecret(systemRandom);
  assertEquals(a.length, 20);
  ok(totpBase32(a) !== totpBase32(b));
  assertMatch(totpBase32(a), /^[A-Z2-7]{32}$/);
  assertEquals(totpSecretFromBase32(totpBase32(a)), a);
});

Deno.test("totpUri() names the issuer and account and states SHA1, 6 digits and 30 s", () => {
  const uri = totpUri(RFC_SECRET, "waf", "alice.w");
  assertEquals(
    uri,
    `otpauth://totp/waf:alice.w?issuer=waf&secret=${
      totpBase32(RFC_SECRET)
    }&algorithm=SHA1&digits=6&period=30`,
  );
});

Deno.test("qrSvgDataUri() encodes a real QR code as an SVG data URI", async () => {
  const uri = await qrSvgDataUri("otpauth://totp/waf:alice?secret=ABC");
  assertMatch(uri, /^data:image\/svg\+xml;base64,[A-Za-z0-9+/]+=*$/);
  const svg = atob(uri.slice(uri.indexOf(",") + 1));
  assertMatch(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" viewBox="0 0 (\d+) \1"/);
  ok(svg.length > 500, "modules are drawn");
});
