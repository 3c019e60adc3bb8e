import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import {
  ADMIN,
  call,
  callJson,
  completeSetup,
  createUser,
  enterRefusalWindow,
  login,
  type Session,
  setCookies,
} from "../../_helpers/identity.ts";
import { createTestApp, type TestBase } from "../../_helpers/server.ts";
import { solveChallenge } from "../../../mod/identity/captcha.ts";
import { sha256Hex } from "../../../mod/core/digest.ts";
import { REFUSAL_LIMITS } from "../../../mod/identity/refusal_audit.ts";

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };

async function ready(): Promise<{ server: TestBase; admin: Session }> {
  const server = await createTestApp({ areas: ["identity"] });
  await completeSetup(server);
  return { server, admin: await login(server, ADMIN.username, ADMIN.password) };
}

async function setPolicy(server: TestBase, admin: Session, policy: Record<string, unknown>) {
  const r = await callJson(server, "PUT", "/api/auth/captcha-policy", {
    session: admin,
    body: policy,
  });
  assertEquals(r.status, 200, JSON.stringify(r.body));
}

async function receipt(server: TestBase, username: string): Promise<string> {
  const c = await callJson(server, "POST", "/api/auth/captcha");
  assertEquals(c.status, 201);
  const challenge = c.body.challenge as string;
  const v = await callJson(server, "POST", "/api/auth/captcha/verify", {
    body: { challenge, nonce: solveChallenge(challenge, c.body.difficulty as number), username },
  });
  assertEquals(v.status, 201, JSON.stringify(v.body));
  return v.body.receipt as string;
}

const code = (r: { body: Record<string, unknown> }) => (r.body.error as { code: string }).code;

Deno.test("login sets an HttpOnly SameSite=Strict session cookie and a readable CSRF cookie, and returns the user", async () => {
  const { server } = await ready();
  await using _ = server;
  const res = await call(server, "POST", "/api/auth/login", { body: ADMIN });
  assertEquals(res.status, 200);
  const body = await res.json();
  const cookies = setCookies(res);
  const session = cookies.get("waf_session")!;
  const csrf = cookies.get("waf_csrf")!;
  assertEquals(session.attrs["httponly"], "");
  assertEquals(session.attrs["samesite"], "Strict");
  assertEquals(session.attrs["path"], "/");
  assertEquals(session.attrs["secure"], undefined);
  assertEquals(csrf.attrs["httponly"], undefined);
  assertEquals(csrf.attrs["samesite"], "Strict");
  assertEquals(body.csrf_token, csrf.value);
  assertEquals(body.user.username, "admin");
  ok(!("password_hash" in body.user));
  assertMatch(session.value, /^[A-Za-z0-9_-]{43}$/);
  // Only the hash of the session id is stored.
  const rows = server.db.prepare("SELECT id_hash FROM admin_sessions").all() as {
    id_hash: string;
  }[];
  ok(rows.some((r) => r.id_hash === sha256Hex(session.value)));
  ok(
    !JSON.stringify(server.db.prepare("SELECT * FROM admin_sessions").all()).includes(
      session.value,
    ),
  );
});

Deno.test("a wrong password and an unknown user get the same 401, and each failure is audited without the password", async () => {
  const { server } = await ready();
  await using _ = server;
  const wrong = await callJson(server, "POST", "/api/auth/login", {
    body: { username: "admin", password: "Wrong-Pass-93" },
  });
  const unknown = await callJson(server, "POST", "/api/auth/login", {
    body: { username: "nobody", password: "Wrong-Pass-93" },
  });
  assertEquals([wrong.status, unknown.status], [401, 401]);
  assertEquals(code(wrong), "UNAUTHORIZED");
  assertEquals(
    (wrong.body.error as { message: string }).message,
    (unknown.body.error as { message: string }).message,
  );
  const rows = server.db.prepare(
    "SELECT detail FROM audit_log WHERE action = 'auth.login' AND result = 'failure' ORDER BY id",
  ).all() as { detail: string }[];
  assertEquals(rows.map((r) => JSON.parse(r.detail).reason), ["wrong_password", "unknown_user"]);
  ok(!JSON.stringify(server.db.prepare("SELECT * FROM audit_log").all()).includes("Wrong-Pass-93"));
  for (const l of server.logs) ok(!l.includes("Wrong-Pass-93"));
});

Deno.test("login refuses a non-canonical username with 400 USERNAME_INVALID instead of trimming it", async () => {
  const { server } = await ready();
  await using _ = server;
  for (const username of [" admin", "admin ", "Admin\u200b", "admin\ufeff", "\u00a0admin"]) {
    const r = await callJson(server, "POST", "/api/auth/login", {
      body: { username, password: ADMIN.password },
    });
    assertEquals(r.status, 400, JSON.stringify(username));
    assertEquals(code(r), "USERNAME_INVALID");
  }
});

Deno.test("GET /api/auth/session describes the session; logout needs CSRF and ends it", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const s = await callJson(server, "GET", "/api/auth/session", { session: admin });
  assertEquals(s.status, 200);
  assertEquals((s.body.user as { username: string }).username, "admin");
  assertEquals(s.body.permissions, ["*"]);
  assertEquals(s.body.csrf_token, admin.csrf);
  assertEquals((await callJson(server, "GET", "/api/auth/session")).status, 401);
  const noCsrf = await callJson(server, "POST", "/api/auth/logout", {
    session: admin,
    csrf: false,
  });
  assertEquals(noCsrf.status, 403);
  assertEquals(code(noCsrf), "CSRF_INVALID");
  const out = await call(server, "POST", "/api/auth/logout", { session: admin });
  assertEquals(out.status, 204);
  assertEquals(setCookies(out).get("waf_session")!.attrs["max-age"], "0");
  assertEquals(
    (await callJson(server, "GET", "/api/auth/session", { session: admin })).status,
    401,
  );
  assertEquals((await callJson(server, "GET", "/api/users", { session: admin })).status, 401);
  const audit = server.db.prepare("SELECT action FROM audit_log WHERE action = 'auth.logout'")
    .all();
  assertEquals(audit.length, 1);
});

Deno.test("state-changing requests with a session need X-CSRF-Token equal to the CSRF cookie of that session", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const other = await login(server, ADMIN.username, ADMIN.password);
  const body = { username: "viewer", password: VIEWER.password, role: "readonly" };
  const attempts: [string, Parameters<typeof call>[3]][] = [
    ["no header", { session: admin, csrf: false, body }],
    ["empty header", { session: admin, csrf: "", body }],
    ["wrong header", {
      session: admin,
      csrf: admin.csrf.slice(0, -1) + (admin.csrf.endsWith("x") ? "y" : "x"),
      body,
    }],
    // Header and cookie agree, but they belong to another session: not bound to this one.
    [
      "another session's pair",
      {
        session: {
          ...admin,
          cookie: `waf_session=${admin.sessionId}; waf_csrf=${other.csrf}`,
          csrf: other.csrf,
        },
        body,
      },
    ],
    [
      "header without cookie",
      { session: { ...admin, cookie: `waf_session=${admin.sessionId}` }, body },
    ],
  ];
  for (const [label, options] of attempts) {
    const r = await callJson(server, "POST", "/api/users", options);
    assertEquals(r.status, 403, label);
    assertEquals(code(r), "CSRF_INVALID", label);
  }
  assertEquals(server.identity.users.list().length, 1);
  // Reads are not CSRF-checked; a correct pair passes.
  assertEquals((await callJson(server, "GET", "/api/users", { session: admin })).status, 200);
  assertEquals(
    (await callJson(server, "POST", "/api/users", { session: admin, body })).status,
    201,
  );
  const denied = server.db.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE action = 'auth.csrf'")
    .get() as { n: number };
  assertEquals(denied.n, attempts.length);
});

/**
 * Five wrong passwords lock admin out of this client (429 for 30 s), one more after it doubles the
 * lockout (60 s), then the right password lets it in: returns the refused logins' audit records.
 * `offsetMs` places the first refusal that far into an aligned refusal-audit window.
 */
async function lockoutAndBack(offsetMs: number) {
  const { server, admin } = await ready();
  await using _ = server;
  await setPolicy(server, admin, { mode: "never", failures: 3, difficulty: 8 });
  enterRefusalWindow(server, offsetMs);
  for (let i = 0; i < 5; i++) {
    const r = await callJson(server, "POST", "/api/auth/login", {
      body: { username: "admin", password: `Wrong-Pass-${i}x` },
    });
    assertEquals(r.status, 401);
  }
  const locked = await call(server, "POST", "/api/auth/login", { body: ADMIN });
  assertEquals(locked.status, 429);
  assertEquals(locked.headers.get("retry-after"), "30");
  const body = await locked.json();
  assertEquals(body.error.code, "TOO_MANY_ATTEMPTS");
  assertEquals(body.error.retry_after, 30);
  server.clock.advance(30_000);
  const again = await callJson(server, "POST", "/api/auth/login", {
    body: { username: "admin", password: "Wrong-Pass-x9" },
  });
  assertEquals(again.status, 401);
  const longer = await call(server, "POST", "/api/auth/login", { body: ADMIN });
  assertEquals(longer.status, 429);
  assertEquals(longer.headers.get("retry-after"), "60");
  await longer.body?.cancel();
  server.clock.advance(60_000);
  await login(server, ADMIN.username, ADMIN.password);
  server.identity.refusals.flush();
  return (server.db.prepare(
    "SELECT count, detail FROM audit_log WHERE action = 'auth.login' AND result = 'failure' ORDER BY id",
  ).all() as { count: number; detail: string }[]).map((r) => ({
    count: r.count,
    reasons: JSON.parse(r.detail).reasons,
  }));
}

Deno.test("failed logins lock the client out with 429 and Retry-After, with backoff, then let it in again", async () => {
  // One aggregated record for this client and username: 6 wrong passwords and 2 lockouts.
  assertEquals(await lockoutAndBack(1000), [
    { count: 8, reasons: { wrong_password: 6, locked_out: 2 } },
  ]);
});

Deno.test("a lockout that spans a refusal-audit window's end holds, and each window has its own record", async () => {
  // The first six refusals fall 10 s before the window's end, the next two 20 s into the next.
  assertEquals(await lockoutAndBack(REFUSAL_LIMITS.windowMs - 10_000), [
    { count: 6, reasons: { wrong_password: 5, locked_out: 1 } },
    { count: 2, reasons: { wrong_password: 1, locked_out: 1 } },
  ]);
});

Deno.test("login-options is public and says when a CAPTCHA is needed (after N failures of this client and username by default)", async () => {
  const { server } = await ready();
  await using _ = server;
  assertEquals((await callJson(server, "GET", "/api/auth/login-options")).body, {
    captcha_required: false,
    totp_required: false,
  });
  for (let i = 0; i < 3; i++) {
    await callJson(server, "POST", "/api/auth/login", {
      body: { username: "admin", password: `Wrong-Pass-${i}x` },
    });
  }
  const asked = async (q: string) =>
    (await callJson(server, "GET", `/api/auth/login-options${q}`)).body.captcha_required;
  assertEquals(await asked("?username=admin"), true);
  assertEquals(await asked("?username=viewer"), false, "another username from this client");
  assertEquals(await asked(""), false, "the client alone is below its ceiling");
  const refused = await callJson(server, "POST", "/api/auth/login", { body: ADMIN });
  assertEquals(refused.status, 403);
  assertEquals(code(refused), "CAPTCHA_REQUIRED");
  await login(server, ADMIN.username, ADMIN.password, {
    captcha_receipt: await receipt(server, "admin"),
  });
});

Deno.test("a CAPTCHA receipt is single-use, bound to the username, and expires", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  await setPolicy(server, admin, { mode: "always", failures: 3, difficulty: 8 });
  const none = await callJson(server, "POST", "/api/auth/login", { body: ADMIN });
  assertEquals(code(none), "CAPTCHA_REQUIRED");
  const r1 = await receipt(server, "admin");
  await login(server, ADMIN.username, ADMIN.password, { captcha_receipt: r1 });
  const reused = await callJson(server, "POST", "/api/auth/login", {
    body: { ...ADMIN, captcha_receipt: r1 },
  });
  assertEquals(reused.status, 403);
  assertEquals(code(reused), "CAPTCHA_INVALID");
  assertEquals((reused.body.error as { reason: string }).reason, "reused");
  const forOther = await callJson(server, "POST", "/api/auth/login", {
    body: { ...ADMIN, captcha_receipt: await receipt(server, "someone") },
  });
  assertEquals((forOther.body.error as { reason: string }).reason, "wrong_username");
  const late = await receipt(server, "admin");
  server.clock.advance(120_000);
  const expired = await callJson(server, "POST", "/api/auth/login", {
    body: { ...ADMIN, captcha_receipt: late },
  });
  assertEquals((expired.body.error as { reason: string }).reason, "expired");
  // A wrong password still spends the receipt: the client needs a fresh challenge.
  const spent = await receipt(server, "admin");
  const wrong = await callJson(server, "POST", "/api/auth/login", {
    body: { username: "admin", password: "Wrong-Pass-77", captcha_receipt: spent },
  });
  assertEquals(wrong.status, 401);
  const retry = await callJson(server, "POST", "/api/auth/login", {
    body: { ...ADMIN, captcha_receipt: spent },
  });
  assertEquals((retry.body.error as { reason: string }).reason, "reused");
});

Deno.test("a CAPTCHA challenge is spent by its first verification, right or wrong", async () => {
  const { server } = await ready();
  await using _ = server;
  const c = await callJson(server, "POST", "/api/auth/captcha");
  const challenge = c.body.challenge as string;
  const nonce = solveChallenge(challenge, c.body.difficulty as number);
  const first = await callJson(server, "POST", "/api/auth/captcha/verify", {
    body: { challenge, nonce, username: "admin" },
  });
  assertEquals(first.status, 201);
  const second = await callJson(server, "POST", "/api/auth/captcha/verify", {
    body: { challenge, nonce, username: "admin" },
  });
  assertEquals(second.status, 403);
  assertEquals((second.body.error as { reason: string }).reason, "reused");
  const badName = await callJson(server, "POST", "/api/auth/captcha/verify", {
    body: { challenge, nonce, username: "admin " },
  });
  assertEquals(code(badName), "USERNAME_INVALID");
});

Deno.test("a changed password, role or username invalidates existing sessions at their next request", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const viewerId = await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const viewer = await login(server, VIEWER.username, VIEWER.password);
  const adminTwo = await login(server, ADMIN.username, ADMIN.password);
  assertEquals((await callJson(server, "GET", "/api/users", { session: viewer })).status, 200);
  // Role change of the viewer: its session dies, the admin's live on.
  const role = await callJson(server, "PUT", `/api/users/${viewerId}`, {
    session: admin,
    body: { role: "admin" },
  });
  assertEquals(role.status, 200);
  assertEquals((await callJson(server, "GET", "/api/users", { session: viewer })).status, 401);
  assertEquals((await callJson(server, "GET", "/api/users", { session: adminTwo })).status, 200);
  // The viewer logs in again (now admin); a username change kills that session too.
  const viewer2 = await login(server, VIEWER.username, VIEWER.password);
  await callJson(server, "PUT", `/api/users/${viewerId}`, {
    session: admin,
    body: { username: "viewer2" },
  });
  assertEquals(
    (await callJson(server, "GET", "/api/auth/session", { session: viewer2 })).status,
    401,
  );
  // The admin changes its own password (confirming the current one): every admin session,
  // including this one, ends.
  const me = (await callJson(server, "GET", "/api/auth/session", { session: admin })).body
    .user as { id: string };
  const pw = await callJson(server, "PUT", `/api/users/${me.id}`, {
    session: admin,
    body: { password: "New-Horse-Battery-8", current_password: ADMIN.password },
  });
  assertEquals(pw.status, 200);
  assertEquals((await callJson(server, "GET", "/api/users", { session: admin })).status, 401);
  assertEquals((await callJson(server, "GET", "/api/users", { session: adminTwo })).status, 401);
  await login(server, ADMIN.username, "New-Horse-Battery-8");
});

Deno.test("a session ends after 30 idle minutes and after 12 hours in any case", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  server.clock.advance(29 * 60_000);
  assertEquals(
    (await callJson(server, "GET", "/api/auth/session", { session: admin })).status,
    200,
  );
  server.clock.advance(30 * 60_000);
  assertEquals(
    (await callJson(server, "GET", "/api/auth/session", { session: admin })).status,
    401,
  );
  const busy = await login(server, ADMIN.username, ADMIN.password);
  for (let elapsed = 0; elapsed < 12 * 60; elapsed += 20) {
    assertEquals(
      (await callJson(server, "GET", "/api/auth/session", { session: busy })).status,
      200,
      `${elapsed} min`,
    );
    server.clock.advance(20 * 60_000);
  }
  assertEquals((await callJson(server, "GET", "/api/auth/session", { session: busy })).status, 401);
});

Deno.test("the CAPTCHA policy is read with read:system and changed with write:system, audited", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const viewer = await login(server, VIEWER.username, VIEWER.password);
  assertEquals(
    (await callJson(server, "GET", "/api/auth/captcha-policy", { session: viewer })).body,
    {
      mode: "after_failures",
      failures: 3,
      difficulty: 14,
    },
  );
  const denied = await callJson(server, "PUT", "/api/auth/captcha-policy", {
    session: viewer,
    body: { mode: "never", failures: 3, difficulty: 8 },
  });
  assertEquals(denied.status, 403);
  assertEquals(code(denied), "FORBIDDEN");
  const bad = await callJson(server, "PUT", "/api/auth/captcha-policy", {
    session: admin,
    body: { mode: "sometimes", failures: 3, difficulty: 8 },
  });
  assertEquals(bad.status, 400);
  await setPolicy(server, admin, { mode: "always", failures: 5, difficulty: 10 });
  assertEquals(
    (await callJson(server, "GET", "/api/auth/captcha-policy", { session: admin })).body,
    {
      mode: "always",
      failures: 5,
      difficulty: 10,
    },
  );
  const rows = server.db.prepare(
    "SELECT result FROM audit_log WHERE action = 'auth.captcha_policy.update' ORDER BY id",
  ).all() as { result: string }[];
  assertEquals(rows.map((r) => r.result), ["failure", "success"]);
});

Deno.test("an anonymous login flood writes a bounded number of audit records, each with its count (issue #22.3)", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const attempts = 300;
  for (let i = 0; i < attempts; i++) {
    const username = i < 200 ? "admin" : `user${i}`;
    const r = await call(server, "POST", "/api/auth/login", {
      body: { username, password: `Wrong-Pass-${i}x` },
    });
    ok([401, 403, 429].includes(r.status), `${r.status}`);
    await r.body?.cancel();
  }
  server.identity.refusals.flush();
  const rows = server.db.prepare(
    "SELECT count, retention FROM audit_log WHERE action = 'auth.login' AND result = 'failure'",
  ).all() as { count: number; retention: string }[];
  // 300 refusals from one address: its own cap of records, never one row per refusal.
  ok(rows.length <= 11, `${rows.length} records`);
  assertEquals(rows.reduce((n, r) => n + r.count, 0), attempts);
  ok(rows.every((r) => r.retention === "auth_failure"));
  const listed = await callJson(server, "GET", "/api/audit?action=auth.login&result=failure", {
    session: admin,
  });
  const items = listed.body.items as { count: number; detail: { username: string } }[];
  assertEquals(items.find((i) => i.detail.username === "admin")!.count, 200);
  // Past 30 refusals in the window each refusal is answered a second late (the server asked for
  // the delay; the test's sleep does not wait), so a flooding connection gets one answer a second.
  assertEquals(server.sleeps.length, attempts - 30);
  ok(server.sleeps.every((ms) => ms === 1000));
  // Signing in is never delayed, even from the flooding address.
  await login(server, ADMIN.username, ADMIN.password, {
    captcha_receipt: await receipt(server, "admin"),
  });
  assertEquals(server.sleeps.length, attempts - 30);
});
