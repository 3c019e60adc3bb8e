import { assertEquals, assertThrows, ok } from "../../_helpers/assert.ts";
import {
  CAPTCHA_TTL_MS,
  CaptchaError,
  createCaptcha,
  solveChallenge,
} from "../../../mod/identity/captcha.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { systemRandom } from "../../../mod/core/random.ts";

const key = new Uint8Array(32).fill(7);

function setup() {
  const clock = new FakeClock();
  const captcha = createCaptcha({ key, clock, random: systemRandom });
  const solved = (ip = "10.0.0.1", username = "admin") => {
    const c = captcha.challenge(ip, 8);
    return captcha.verify({
      challenge: c.challenge,
      nonce: solveChallenge(c.challenge, 8),
      username,
      clientIp: ip,
    });
  };
  return { clock, captcha, solved };
}

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof CaptchaError) return err.reason;
    throw err;
  }
  throw new Error("expected a CaptchaError");
}

Deno.test("a solved challenge yields a receipt that a login from the same client and username consumes", () => {
  const { captcha, solved } = setup();
  const { receipt } = solved();
  captcha.consumeReceipt(receipt, "admin", "10.0.0.1");
});

Deno.test("a receipt is single-use", () => {
  const { captcha, solved } = setup();
  const { receipt } = solved();
  captcha.consumeReceipt(receipt, "admin", "10.0.0.1");
  assertEquals(reason(() => captcha.consumeReceipt(receipt, "admin", "10.0.0.1")), "reused");
});

Deno.test("a receipt is bound to its username exactly and to its client", () => {
  const { captcha, solved } = setup();
  assertEquals(
    reason(() => captcha.consumeReceipt(solved().receipt, "Admin", "10.0.0.1")),
    "wrong_username",
  );
  assertEquals(
    reason(() => captcha.consumeReceipt(solved().receipt, "admin", "10.0.0.2")),
    "wrong_client",
  );
});

Deno.test("a receipt expires after two minutes", () => {
  const { captcha, clock, solved } = setup();
  const { receipt } = solved();
  clock.advance(CAPTCHA_TTL_MS);
  assertEquals(reason(() => captcha.consumeReceipt(receipt, "admin", "10.0.0.1")), "expired");
});

Deno.test("a challenge is single-use, even after a wrong answer", () => {
  const { captcha } = setup();
  const c = captcha.challenge("10.0.0.1", 8);
  const nonce = solveChallenge(c.challenge, 8);
  const wrong = String(Number(nonce) + 1);
  const attempt = (n: string) => () =>
    captcha.verify({ challenge: c.challenge, nonce: n, username: "admin", clientIp: "10.0.0.1" });
  // The next nonce may solve it by chance at 8 bits; only "not accepted twice" is certain.
  try {
    attempt(wrong)();
  } catch (err) {
    ok(err instanceof CaptchaError && err.reason === "wrong_answer");
  }
  assertEquals(reason(attempt(nonce)), "reused");
});

Deno.test("a challenge expires, is bound to its client, and refuses tampering", () => {
  const { captcha, clock } = setup();
  const c = captcha.challenge("10.0.0.1", 8);
  const nonce = solveChallenge(c.challenge, 8);
  assertEquals(
    reason(() =>
      captcha.verify({ challenge: c.challenge, nonce, username: "admin", clientIp: "10.9.9.9" })
    ),
    "wrong_client",
  );
  const c2 = captcha.challenge("10.0.0.1", 8);
  const [v, body, sig] = c2.challenge.split(".");
  const claims = JSON.parse(atob(body!.replaceAll("-", "+").replaceAll("_", "/")));
  const easier = btoa(JSON.stringify({ ...claims, d: 0 })).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
  assertEquals(
    reason(() =>
      captcha.verify({
        challenge: `${v}.${easier}.${sig}`,
        nonce: "0",
        username: "admin",
        clientIp: "10.0.0.1",
      })
    ),
    "bad_signature",
  );
  const c3 = captcha.challenge("10.0.0.1", 8);
  clock.advance(CAPTCHA_TTL_MS + 1);
  assertEquals(
    reason(() =>
      captcha.verify({
        challenge: c3.challenge,
        nonce: solveChallenge(c3.challenge, 8),
        username: "admin",
        clientIp: "10.0.0.1",
      })
    ),
    "expired",
  );
});

Deno.test("a receipt is not a challenge and a challenge is not a receipt", () => {
  const { captcha, solved } = setup();
  const c = captcha.challenge("10.0.0.1", 8);
  assertEquals(reason(() => captcha.consumeReceipt(c.challenge, "admin", "10.0.0.1")), "malformed");
  const { receipt } = solved();
  assertEquals(
    reason(() =>
      captcha.verify({ challenge: receipt, nonce: "1", username: "admin", clientIp: "10.0.0.1" })
    ),
    "malformed",
  );
});

Deno.test("tokens from another process (a restart) are refused", () => {
  const { solved } = setup();
  const { receipt } = solved();
  const other = createCaptcha({ key, clock: new FakeClock(), random: systemRandom });
  assertThrows(() => other.consumeReceipt(receipt, "admin", "10.0.0.1"), CaptchaError);
});
