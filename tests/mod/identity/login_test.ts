import { assertEquals, assertRejects } from "../../_helpers/assert.ts";
import { ADMIN, completeSetup } from "../../_helpers/identity.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { AppError } from "../../../mod/core/errors.ts";
import { solveChallenge } from "../../../mod/identity/captcha.ts";

const ctx = (clientIp: string) => ({ clientIp, traceId: "t".repeat(32), userAgent: null });

async function fail(
  server: Awaited<ReturnType<typeof startTestServer>>,
  username: string,
  ip: string,
): Promise<number> {
  try {
    await server.identity.login.login({ username, password: "Wrong-Pass-91" }, ctx(ip));
  } catch (err) {
    if (err instanceof AppError) return err.status;
    throw err;
  }
  throw new Error("expected the login to fail");
}

/** A receipt for `username` at `ip`, solved like the console does. */
function solvedReceipt(
  server: Awaited<ReturnType<typeof startTestServer>>,
  username: string,
  ip: string,
): string {
  const c = server.identity.captcha.challenge(ip, 8);
  const v = server.identity.captcha.verify({
    challenge: c.challenge,
    nonce: solveChallenge(c.challenge, c.difficulty),
    username,
    clientIp: ip,
  });
  return v.receipt;
}

function neverCaptcha(server: Awaited<ReturnType<typeof startTestServer>>): void {
  const settings = server.db.prepare(
    "INSERT INTO settings (key, value, updated_at) VALUES ('auth.captcha_policy', ?, 0)",
  );
  settings.run(JSON.stringify({ mode: "never", failures: 3, difficulty: 8 }));
}

const refusedWith = async (
  server: Awaited<ReturnType<typeof startTestServer>>,
  input: { username: string; password: string; captcha_receipt?: string },
  ip: string,
) => {
  try {
    await server.identity.login.login(input, ctx(ip));
  } catch (err) {
    if (err instanceof AppError) return `${err.status} ${err.code}`;
    throw err;
  }
  return "200";
};

Deno.test("five wrong passwords lock that (username, client) pair only: the administrator elsewhere signs in", async () => {
  await using server = await startTestServer();
  await completeSetup(server);
  neverCaptcha(server);
  for (let i = 0; i < 5; i++) assertEquals(await fail(server, "admin", "10.0.0.9"), 401);
  await assertRejects(
    () => server.identity.login.login(ADMIN, ctx("10.0.0.9")),
    (e: unknown) => e instanceof AppError && e.status === 429 && e.details?.["retry_after"] === 30,
  );
  // The real administrator at another address is not locked out (issue #22.4) ...
  assertEquals((await server.identity.login.login(ADMIN, ctx("10.0.0.10"))).user.username, "admin");
  // ... and the attacking address may still try another username.
  assertEquals(await fail(server, "someone", "10.0.0.9"), 401);
});

Deno.test("a distributed attack on one username never locks it: past the ceiling everyone needs a CAPTCHA, which the right password passes", async () => {
  await using server = await startTestServer();
  await completeSetup(server);
  // Ten real wrong passwords, the other 90 counted as the login counts them (each real one costs
  // a 600,000-iteration hash).
  for (let i = 0; i < 10; i++) assertEquals(await fail(server, "admin", `10.1.0.${i}`), 401);
  for (let i = 10; i < 99; i++) server.identity.login.throttle.fail("admin", `10.1.0.${i}`);
  assertEquals(server.identity.login.options("10.9.9.9", "admin").captcha_required, false);
  assertEquals(await fail(server, "admin", "10.1.0.99"), 401);
  const clean = "10.9.9.9";
  assertEquals(server.identity.login.options(clean, "admin").captcha_required, true);
  assertEquals(server.identity.login.options(clean, "viewer").captcha_required, false);
  assertEquals(await refusedWith(server, ADMIN, clean), "403 CAPTCHA_REQUIRED");
  const receipt = solvedReceipt(server, "admin", clean);
  assertEquals(await refusedWith(server, { ...ADMIN, captcha_receipt: receipt }, clean), "200");
});

Deno.test("a success resets its own pair: typos before it no longer count", async () => {
  await using server = await startTestServer();
  await completeSetup(server);
  neverCaptcha(server);
  for (let i = 0; i < 4; i++) await fail(server, "admin", "127.0.0.1");
  await server.identity.login.login(ADMIN, ctx("127.0.0.1"));
  assertEquals(server.identity.login.throttle.pressure("127.0.0.1", "admin").pairFailures, 0);
  // Four more typos stay below the lock: without the reset the fifth failure overall would lock.
  for (let i = 0; i < 4; i++) assertEquals(await fail(server, "admin", "127.0.0.1"), 401);
  assertEquals((await server.identity.login.login(ADMIN, ctx("127.0.0.1"))).user.username, "admin");
});

Deno.test("the CAPTCHA follows the pair's failures, and a client spraying usernames past its ceiling", async () => {
  await using server = await startTestServer();
  await completeSetup(server);
  for (let i = 0; i < 3; i++) await fail(server, "admin", "10.0.0.1");
  const options = (ip: string, username?: string) => server.identity.login.options(ip, username);
  assertEquals(options("10.0.0.1", "admin").captcha_required, true);
  assertEquals(options("10.0.9.9", "admin").captcha_required, false, "another client");
  assertEquals(options("10.0.0.1", "viewer").captcha_required, false, "another username");
  assertEquals(await refusedWith(server, ADMIN, "10.0.0.1"), "403 CAPTCHA_REQUIRED");
  assertEquals(await refusedWith(server, ADMIN, "10.0.9.9"), "200");
  assertEquals(await fail(server, "user0", "10.0.0.1"), 401);
  for (let i = 1; i < 17; i++) server.identity.login.throttle.fail(`user${i}`, "10.0.0.1");
  assertEquals(options("10.0.0.1").captcha_required, true, "20 failures across usernames");
  assertEquals(options("10.0.0.1", "fresh").captcha_required, true);
  assertEquals(options("10.0.0.2").captcha_required, false);
});
