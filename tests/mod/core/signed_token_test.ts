import { assertEquals } from "../../_helpers/assert.ts";
import { createSignedTokens } from "../../../mod/core/signed_token.ts";

const key = new TextEncoder().encode("k".repeat(32));
const T0 = 1_700_000_000_000;

Deno.test("a signed token opens to its claims until it expires", () => {
  const tokens = createSignedTokens(key);
  const t = tokens.sign({ e: T0 + 1000, n: "x" });
  assertEquals(tokens.open(t, T0), { ok: true, claims: { e: T0 + 1000, n: "x" } });
  assertEquals(tokens.open(t, T0 + 1000), { ok: false, reason: "expired" });
});

Deno.test("a token with another key, a changed payload or a bad shape is refused", () => {
  const tokens = createSignedTokens(key);
  const t = tokens.sign({ e: T0 + 1000 });
  const other = createSignedTokens(new Uint8Array(32));
  assertEquals(other.open(t, T0), { ok: false, reason: "bad_signature" });
  const [body, mac] = t.split(".");
  const changed = `${body!.slice(0, -1)}${body!.endsWith("A") ? "B" : "A"}.${mac}`;
  assertEquals(tokens.open(changed, T0), { ok: false, reason: "bad_signature" });
  for (const bad of ["", "nodot", ".x", `${t}.x`, "x".repeat(5000)]) {
    assertEquals(tokens.open(bad, T0), { ok: false, reason: "malformed" }, bad.slice(0, 20));
  }
  const noExpiry = tokens.sign({ e: "soon" } as unknown as { e: number });
  assertEquals(tokens.open(noExpiry, T0), { ok: false, reason: "malformed" });
});

Deno.test("a versioned token carries its version under the MAC", () => {
  const v1 = createSignedTokens(key, { version: "v1" });
  const t = v1.sign({ e: T0 + 1 });
  assertEquals(t.startsWith("v1."), true);
  assertEquals(v1.open(t, T0).ok, true);
  assertEquals(v1.open(`v2.${t.slice(3)}`, T0), { ok: false, reason: "malformed" });
  assertEquals(createSignedTokens(key).open(t.slice(3), T0), {
    ok: false,
    reason: "bad_signature",
  });
});
