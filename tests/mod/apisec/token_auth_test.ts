import { SignJWT } from "jose";
import { assertEquals, ok } from "../../_helpers/assert.ts";
import type { CompiledAuth } from "../../../mod/apisec/apisec_compile.ts";
import { createTokenAuth } from "../../../mod/apisec/token_auth.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";

const SECRET = new TextEncoder().encode("s".repeat(32));

const AUTH: CompiledAuth = {
  routes: [],
  algorithms: ["HS256"],
  issuer: null,
  audience: [],
  clockSkewSeconds: 30,
  requireExp: true,
  secretSealed: "sealed.secret",
  pem: null,
  jwks: null,
  remote: null,
};

async function bearer(now: number): Promise<string> {
  const t = Math.floor(now / 1000);
  const jwt = await new SignJWT({ sub: "client-1" }).setProtectedHeader({ alg: "HS256" })
    .setIssuedAt(t).setExpirationTime(t + 600).sign(SECRET);
  return `Bearer ${jwt}`;
}

Deno.test("createTokenAuth() refuses an HS token as no_key, not malformed, when the stored secret cannot be opened, and logs it once", async () => {
  const clock = new FakeClock();
  const logger = createMemoryLogger();
  const auth = createTokenAuth({
    clock,
    logger,
    openSecret: () => Promise.reject(new Error("the box cannot open this value")),
  });
  const header = await bearer(clock.now());
  assertEquals(await auth.authenticate(AUTH, header, clock.now()), {
    ok: false,
    reason: "no_key",
  });
  assertEquals(await auth.authenticate(AUTH, header, clock.now()), {
    ok: false,
    reason: "no_key",
  });
  const lines = logger.lines.filter((l) =>
    l.includes("cannot open the API-security shared secret")
  );
  assertEquals(lines.length, 1, logger.lines.join("\n"));
  ok(!lines[0]!.includes("s".repeat(32)), "the secret is not logged");
  // A token that really is malformed is still said to be.
  assertEquals(await auth.authenticate(AUTH, "Bearer abc.def.ghi", clock.now()), {
    ok: false,
    reason: "malformed",
  });
});

Deno.test("createTokenAuth() verifies an HS token with the opened secret", async () => {
  const clock = new FakeClock();
  const auth = createTokenAuth({
    clock,
    logger: createMemoryLogger(),
    openSecret: () => Promise.resolve(SECRET),
  });
  assertEquals(await auth.authenticate(AUTH, await bearer(clock.now()), clock.now()), { ok: true });
});

Deno.test("createTokenAuth() refuses a valid token without exp as missing_exp unless requireExp is off", async () => {
  const clock = new FakeClock();
  const auth = createTokenAuth({
    clock,
    logger: createMemoryLogger(),
    openSecret: () => Promise.resolve(SECRET),
  });
  const jwt = await new SignJWT({ sub: "client-1" }).setProtectedHeader({ alg: "HS256" })
    .setIssuedAt(Math.floor(clock.now() / 1000)).sign(SECRET);
  const header = `Bearer ${jwt}`;
  assertEquals(await auth.authenticate(AUTH, header, clock.now()), {
    ok: false,
    reason: "missing_exp",
  });
  // Asked again, it is still refused: a refusal is never cached as a pass.
  assertEquals(await auth.authenticate(AUTH, header, clock.now()), {
    ok: false,
    reason: "missing_exp",
  });
  const lenient = { ...AUTH, requireExp: false };
  assertEquals(await auth.authenticate(lenient, header, clock.now()), { ok: true });
  // A token with exp passes either way.
  assertEquals(await auth.authenticate(AUTH, await bearer(clock.now()), clock.now()), { ok: true });
});
