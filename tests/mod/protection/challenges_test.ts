import { assertEquals, ok } from "../../_helpers/assert.ts";
import { solves } from "../../../engine/bot.ts";
import { createChallengeIssuer } from "../../../mod/protection/challenges.ts";

const secret = new TextEncoder().encode("test-secret-test-secret-test-sec");
const T0 = 1_700_000_000_000;
const UA = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0";

function issuer(maxUsed?: number) {
  return createChallengeIssuer({
    secret,
    difficulty: 8,
    puzzleTtlMs: 60_000,
    clearanceTtlMs: 3_600_000,
    maxUsed,
  });
}

function solve(nonce: string, difficulty: number): string {
  for (let i = 0;; i++) if (solves(nonce, String(i), difficulty)) return String(i);
}

Deno.test("a solved puzzle verifies once for the same client", () => {
  const bot = issuer();
  const p = bot.issue("nonce-1", "10.0.0.1", UA, T0);
  const answer = solve(p.nonce, p.difficulty);
  assertEquals(bot.verify(p.token, answer, { ip: "10.0.0.1", userAgent: UA }, T0 + 1000), {
    ok: true,
  });
  assertEquals(bot.verify(p.token, answer, { ip: "10.0.0.1", userAgent: UA }, T0 + 1000), {
    ok: false,
    reason: "reused",
  });
});

Deno.test("a puzzle is refused for another client, after expiry, with a wrong answer or a forged signature", () => {
  const bot = issuer();
  const p = bot.issue("nonce-2", "10.0.0.1", UA, T0);
  const answer = solve(p.nonce, p.difficulty);
  assertEquals(bot.verify(p.token, answer, { ip: "10.0.0.2", userAgent: UA }, T0).ok, false);
  assertEquals(bot.verify(p.token, answer, { ip: "10.0.0.1", userAgent: "curl/8" }, T0), {
    ok: false,
    reason: "wrong_client",
  });
  assertEquals(bot.verify(p.token, answer, { ip: "10.0.0.1", userAgent: UA }, T0 + 60_000), {
    ok: false,
    reason: "expired",
  });
  let wrong = 0;
  while (solves(p.nonce, `x${wrong}`, p.difficulty)) wrong++;
  assertEquals(bot.verify(p.token, `x${wrong}`, { ip: "10.0.0.1", userAgent: UA }, T0), {
    ok: false,
    reason: "wrong_answer",
  });
  const forged = p.token.slice(0, -2) + (p.token.endsWith("AA") ? "BB" : "AA");
  assertEquals(bot.verify(forged, answer, { ip: "10.0.0.1", userAgent: UA }, T0), {
    ok: false,
    reason: "bad_signature",
  });
  const other = createChallengeIssuer({
    secret: new Uint8Array(32),
    difficulty: 8,
    puzzleTtlMs: 1,
    clearanceTtlMs: 1,
  });
  assertEquals(other.verify(p.token, answer, { ip: "10.0.0.1", userAgent: UA }, T0), {
    ok: false,
    reason: "bad_signature",
  });
  assertEquals(
    bot.verify(p.token, answer, { ip: "10.0.0.1", userAgent: UA }, T0),
    { ok: true },
    "failures do not consume the puzzle",
  );
});

Deno.test("the used-nonce set stays bounded", () => {
  const bot = issuer(10);
  for (let i = 0; i < 50; i++) {
    const p = bot.issue(`n${i}`, "10.0.0.1", UA, T0);
    ok(bot.verify(p.token, solve(p.nonce, p.difficulty), { ip: "10.0.0.1", userAgent: UA }, T0).ok);
  }
  ok(bot.usedCount() <= 10);
});

Deno.test("a clearance cookie is bound to the client and expires", () => {
  const bot = issuer();
  const c = bot.clearance("10.0.0.1", UA, T0);
  ok(bot.checkClearance(c.value, "10.0.0.1", UA, T0 + 1000));
  ok(!bot.checkClearance(c.value, "10.0.0.9", UA, T0 + 1000));
  ok(!bot.checkClearance(c.value, "10.0.0.1", UA, c.expiresAt));
  ok(!bot.checkClearance(c.value + "x", "10.0.0.1", UA, T0));
  ok(!bot.checkClearance("garbage", "10.0.0.1", UA, T0));
});
