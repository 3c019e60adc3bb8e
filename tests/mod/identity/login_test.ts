import { assertEquals, assertRejects } from "../../_helpers/assert.ts";
import { ADMIN, completeSetup } from "../../_helpers/identity.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { AppError } from "../../../mod/core/errors.ts";

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

function neverCaptcha(server: Awaited<ReturnType<typeof startTestServer>>): void {
  const settings = server.db.prepare(
    "INSERT INTO settings (key, value, updated_at) VALUES ('auth.captcha_policy', ?, 0)",
  );
  settings.run(JSON.stringify({ mode: "never", failures: 3, difficulty: 8 }));
}

Deno.test("failures spread over many clients still lock the username", async () => {
  await using server = await startTestServer();
  await completeSetup(server);
  neverCaptcha(server);
  for (let i = 0; i < 5; i++) assertEquals(await fail(server, "admin", `10.0.0.${i}`), 401);
  await assertRejects(
    () => server.identity.login.login(ADMIN, ctx("10.0.1.1")),
    (e: unknown) => e instanceof AppError && e.status === 429 && e.details?.["retry_after"] === 30,
  );
});

Deno.test("failures from one client against many usernames lock that client only", async () => {
  await using server = await startTestServer();
  await completeSetup(server);
  neverCaptcha(server);
  for (let i = 0; i < 5; i++) assertEquals(await fail(server, `user${i}`, "10.0.0.9"), 401);
  assertEquals(await fail(server, "admin", "10.0.0.9"), 429);
  // Another client logs in normally: the username itself is not locked.
  const ok = await server.identity.login.login(ADMIN, ctx("10.0.0.10"));
  assertEquals(ok.user.username, "admin");
});

Deno.test("a successful login clears the username's failures but not the client's", async () => {
  await using server = await startTestServer();
  await completeSetup(server);
  neverCaptcha(server);
  for (let i = 0; i < 4; i++) await fail(server, "admin", "10.0.0.1");
  await server.identity.login.login(ADMIN, ctx("10.0.0.2"));
  assertEquals(server.identity.login.lockout.failures("user:admin"), 0);
  assertEquals(server.identity.login.lockout.failures("ip:10.0.0.1"), 4);
});

Deno.test("CAPTCHA after N failures counts the username's failures too", async () => {
  await using server = await startTestServer();
  await completeSetup(server);
  for (let i = 0; i < 3; i++) await fail(server, "admin", `10.0.0.${i}`);
  assertEquals(server.identity.login.options("10.0.9.9").captcha_required, false);
  assertEquals(server.identity.login.options("10.0.9.9", "admin").captcha_required, true);
  try {
    await server.identity.login.login(ADMIN, ctx("10.0.9.9"));
    throw new Error("expected a CAPTCHA refusal");
  } catch (e) {
    assertEquals((e as AppError).code, "CAPTCHA_REQUIRED");
  }
});
