/**
 * TOTP two-factor authentication over HTTP on a real server with a fake clock: setup, enable,
 * login with a code, replay, disable, recovery by an administrator, owner-only and session-only
 * access, the pending setup's expiry, rate limiting and encryption at rest.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import {
  as,
  auditItems,
  codeAt,
  errorCode,
  mintToken,
  notificationKinds,
  signedInAdmin,
  VIEWER,
} from "../../_helpers/api_access.ts";
import {
  ADMIN,
  call,
  callJson,
  createUser,
  enterRefusalWindow,
  login,
  type Session,
} from "../../_helpers/identity.ts";
import type { TestBase } from "../../_helpers/server.ts";
import { fromB64urlText } from "../../../mod/core/digest.ts";

const STEP = 30_000;

const ready = signedInAdmin;

const post = (server: TestBase, session: Session, path: string, body: unknown = {}) =>
  callJson(server, "POST", path, { session, body });

/** Sets up and enables 2FA for the signed-in owner; returns the base32 secret. */
async function enable2fa(server: TestBase, session: Session, id: string): Promise<string> {
  const setup = await post(server, session, `/api/users/${id}/2fa/setup`);
  if (setup.status !== 201) throw new Error(`setup: ${setup.status} ${JSON.stringify(setup.body)}`);
  const secret = setup.body.secret as string;
  const r = await post(server, session, `/api/users/${id}/2fa/enable`, {
    code: codeAt(server, secret),
  });
  if (r.status !== 200) throw new Error(`enable: ${r.status} ${JSON.stringify(r.body)}`);
  return secret;
}

const tryLogin = (server: TestBase, user: { username: string; password: string }, extra = {}) =>
  callJson(server, "POST", "/api/auth/login", { body: { ...user, ...extra } });

const pendingSetups = (server: TestBase) =>
  (server.db.prepare("SELECT COUNT(*) AS n FROM settings WHERE key LIKE 'totp.pending.%'")
    .get() as {
      n: number;
    }).n;

/** Turns the login CAPTCHA off, so tests can make more than 3 failed logins. */
async function noCaptcha(server: TestBase, admin: Session): Promise<void> {
  const r = await callJson(server, "PUT", "/api/auth/captcha-policy", {
    session: admin,
    body: { mode: "never", failures: 3, difficulty: 14 },
  });
  if (r.status !== 200) throw new Error(`captcha policy: ${r.status}`);
}

const epoch = (server: TestBase, id: string) =>
  (server.db.prepare("SELECT credential_epoch AS e FROM users WHERE id = ?").get(id) as {
    e: number;
  }).e;

Deno.test("the whole 2FA lifecycle: setup, enable, login needs a code, a reused code is refused, disable", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  // The minutes this test moves the clock must not split the one refusal record it expects.
  enterRefusalWindow(server);
  const before = epoch(server, adminId);

  const setup = await post(server, admin, `/api/users/${adminId}/2fa/setup`);
  assertEquals(setup.status, 201);
  assertEquals(setup.res.headers.get("cache-control"), "no-store");
  const secret = setup.body.secret as string;
  assertMatch(secret, /^[A-Z2-7]{32}$/);
  const uri = new URL(setup.body.otpauth_uri as string);
  assertEquals(uri.protocol, "otpauth:");
  assertEquals([uri.host, decodeURIComponent(uri.pathname)], ["totp", "/waf:admin"]);
  assertEquals(
    [...uri.searchParams].sort(),
    [["algorithm", "SHA1"], ["digits", "6"], ["issuer", "waf"], ["period", "30"], [
      "secret",
      secret,
    ]],
  );
  const qr = setup.body.qr_code as string;
  assertMatch(qr, /^data:image\/svg\+xml;base64,/);
  assertMatch(atob(qr.slice(qr.indexOf(",") + 1)), /^<svg[^>]*>.*<path/s);
  assertEquals(Date.parse(setup.body.expires_at as string), server.clock.now() + 10 * 60_000);
  assertEquals(epoch(server, adminId), before, "a pending setup changes no credential");

  // Not on yet: a login still needs no code, and a wrong code does not enable.
  assertEquals((await tryLogin(server, ADMIN)).status, 200);
  const wrong = await post(server, admin, `/api/users/${adminId}/2fa/enable`, {
    code: codeAt(server, secret, 3),
  });
  assertEquals([wrong.status, errorCode(wrong)], [403, "TOTP_INVALID"]);
  const enableCode = codeAt(server, secret);
  const elsewhere = await login(server, ADMIN.username, ADMIN.password);
  const enabled = await post(server, admin, `/api/users/${adminId}/2fa/enable`, {
    code: enableCode,
  });
  assertEquals(enabled.status, 200);
  assertEquals((enabled.body.user as { totp_enabled: boolean }).totp_enabled, true);
  assertEquals(epoch(server, adminId), before + 1);
  const old = await callJson(server, "GET", "/api/auth/session", { session: elsewhere });
  assertEquals(old.status, 401, "enabling 2FA ends the account's other sessions");
  const kept = await callJson(server, "GET", "/api/auth/session", { session: admin });
  assertEquals(kept.status, 200, "the session that enabled it has proved both factors");

  const options = await callJson(server, "GET", "/api/auth/login-options");
  assertEquals(options.body.totp_required, true);
  const missing = await tryLogin(server, ADMIN);
  assertEquals([missing.status, errorCode(missing)], [401, "TOTP_REQUIRED"]);
  const spent = await tryLogin(server, ADMIN, { totp_code: enableCode });
  assertEquals([spent.status, errorCode(spent)], [401, "TOTP_INVALID"], "the enable code is spent");

  server.clock.advance(STEP);
  const code = codeAt(server, secret);
  const session = await login(server, ADMIN.username, ADMIN.password, { totp_code: code });
  const replay = await tryLogin(server, ADMIN, { totp_code: code });
  assertEquals([replay.status, errorCode(replay)], [401, "TOTP_INVALID"]);

  server.clock.advance(STEP);
  const badPassword = await post(server, session, `/api/users/${adminId}/2fa/disable`, {
    password: "Wrong-Horse-99",
    code: codeAt(server, secret),
  });
  assertEquals([badPassword.status, errorCode(badPassword)], [403, "PASSWORD_INVALID"]);
  const reused = await post(server, session, `/api/users/${adminId}/2fa/disable`, {
    password: ADMIN.password,
    code,
  });
  assertEquals([reused.status, errorCode(reused)], [403, "TOTP_INVALID"]);
  const disabled = await post(server, session, `/api/users/${adminId}/2fa/disable`, {
    password: ADMIN.password,
    code: codeAt(server, secret),
  });
  assertEquals(disabled.status, 200);
  assertEquals((disabled.body.user as { totp_enabled: boolean }).totp_enabled, false);
  assertEquals(epoch(server, adminId), before + 2);
  assertEquals((await callJson(server, "GET", "/api/auth/session", { session })).status, 401);
  assertEquals((await tryLogin(server, ADMIN)).status, 200);
  assertEquals(
    (await callJson(server, "GET", "/api/auth/login-options")).body.totp_required,
    false,
  );

  const fresh = await login(server, ADMIN.username, ADMIN.password);
  server.identity.refusals.flush();
  const items = await auditItems(server, fresh, "limit=500");
  const trail = items.filter((i) => i.action.startsWith("user.2fa.")).map((i) =>
    `${i.action} ${i.result}`
  ).reverse();
  assertEquals(trail, [
    "user.2fa.setup success",
    "user.2fa.enable failure",
    "user.2fa.enable success",
    "user.2fa.disable failure",
    "user.2fa.disable failure",
    "user.2fa.disable success",
  ]);
  // Refused logins of one client and username are one aggregated record with its reasons.
  const refused = items.filter((i) => i.action === "auth.login" && i.result === "failure");
  assertEquals(refused.map((i) => (i.detail as { reasons: unknown }).reasons), [
    { totp_missing: 1, totp_replayed: 2 },
  ]);
  ok(!JSON.stringify(items).includes(secret), "the audit trail never holds the secret");
  ok(!server.logs.join("\n").includes(secret), "the logs never hold the secret");
});

Deno.test("codes of the previous and next 30-second step are accepted, never an older step than the last one used", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  await noCaptcha(server, admin);
  const secret = await enable2fa(server, admin, adminId);
  server.clock.advance(2 * STEP);
  const status = async (steps: number) =>
    (await tryLogin(server, ADMIN, { totp_code: codeAt(server, secret, steps) })).status;
  assertEquals(await status(-1), 200, "the previous step");
  assertEquals(await status(+1), 200, "the next step");
  assertEquals(await status(0), 401, "older than the last accepted step");
  assertEquals(await status(+2), 401, "two steps ahead");
  server.clock.advance(3 * STEP);
  assertEquals(await status(-2), 401, "two steps behind");
  assertEquals(await status(0), 200);
});

Deno.test("a user manages their own 2FA without write:users, never another account's", async () => {
  const { server, adminId } = await ready();
  await using _ = server;
  const viewerId = await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const viewer = await login(server, VIEWER.username, VIEWER.password);
  for (const action of ["setup", "enable", "disable"]) {
    const body = action === "setup"
      ? {}
      : action === "enable"
      ? { code: "123456" }
      : { password: VIEWER.password, code: "123456" };
    const v = await post(server, viewer, `/api/users/${adminId}/2fa/${action}`, body);
    assertEquals([v.status, errorCode(v)], [403, "FORBIDDEN"], `viewer ${action} for admin`);
    assertMatch((v.body.error as { message: string }).message, /write:users/);
  }
  // A read-only account protects itself like any other, and turns it off with its own code.
  const secret = await enable2fa(server, viewer, viewerId);
  const row = server.db.prepare("SELECT totp_enabled FROM users WHERE id = ?").get(viewerId);
  assertEquals({ ...row }, { totp_enabled: 1 });
  server.clock.advance(STEP);
  const session = await login(server, VIEWER.username, VIEWER.password, {
    totp_code: codeAt(server, secret),
  });
  const noCode = await post(server, session, `/api/users/${viewerId}/2fa/disable`, {
    password: VIEWER.password,
  });
  assertEquals(
    [noCode.status, errorCode(noCode)],
    [400, "BAD_REQUEST"],
    "own disable needs a code",
  );
  server.clock.advance(STEP);
  const off = await post(server, session, `/api/users/${viewerId}/2fa/disable`, {
    password: VIEWER.password,
    code: codeAt(server, secret),
  });
  assertEquals(off.status, 200);
});

Deno.test("write:users sets up, enables and disables 2FA of another account (spec 4.3), audited and notified", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const viewerId = await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const missing = await post(server, admin, `/api/users/no-such-id/2fa/setup`);
  assertEquals(missing.status, 404);
  // Enrolment on the user's behalf: the administrator binds the device, e.g. in person.
  const secret = await enable2fa(server, admin, viewerId);
  assertEquals(
    { ...server.db.prepare("SELECT totp_enabled FROM users WHERE id = ?").get(viewerId) },
    { totp_enabled: 1 },
  );
  server.clock.advance(STEP);
  assertEquals((await tryLogin(server, VIEWER)).status, 401, "the viewer now needs a code");
  assertEquals(
    (await tryLogin(server, VIEWER, { totp_code: codeAt(server, secret) })).status,
    200,
  );
  // Turning it off for another account takes the administrator's own password, not a code.
  const wrong = await post(server, admin, `/api/users/${viewerId}/2fa/disable`, {
    password: VIEWER.password,
  });
  assertEquals([wrong.status, errorCode(wrong)], [403, "PASSWORD_INVALID"]);
  const off = await post(server, admin, `/api/users/${viewerId}/2fa/disable`, {
    password: ADMIN.password,
  });
  assertEquals(off.status, 200);
  assertEquals((off.body.user as { totp_enabled: boolean }).totp_enabled, false);
  const trail = (await auditItems(server, admin, "result=success")).filter((i) =>
    i.action.startsWith("user.2fa.")
  ).map((i) => [i.action, i.actor.id, i.target]);
  assertEquals(trail, [
    ["user.2fa.disable", adminId, `user:${viewerId}`],
    ["user.2fa.enable", adminId, `user:${viewerId}`],
    ["user.2fa.setup", adminId, `user:${viewerId}`],
  ]);
  assertEquals(await notificationKinds(server, admin), ["user.2fa.disable"]);
});

Deno.test("API tokens cannot call any 2FA route, whatever their permissions", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const { token } = await mintToken(server, admin, { note: "all", permissions: ["*"] });
  for (const action of ["setup", "enable", "disable", "recover"]) {
    const r = await callJson(
      server,
      "POST",
      `/api/users/${adminId}/2fa/${action}`,
      as(token, { code: "123456", password: ADMIN.password }),
    );
    assertEquals([r.status, errorCode(r)], [403, "FORBIDDEN"], action);
    assertMatch((r.body.error as { message: string }).message, /signed-in user/);
  }
  assertEquals(pendingSetups(server), 0);
});

Deno.test("an administrator recovers another account's 2FA after confirming their own password, audited and notified", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const viewerId = await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const viewer = await login(server, VIEWER.username, VIEWER.password);
  const secret = await enable2fa(server, viewer, viewerId);
  server.clock.advance(STEP);
  const viewerSession = await login(server, VIEWER.username, VIEWER.password, {
    totp_code: codeAt(server, secret),
  });

  const byViewer = await post(server, viewerSession, `/api/users/${adminId}/2fa/recover`, {
    password: VIEWER.password,
  });
  assertEquals([byViewer.status, errorCode(byViewer)], [403, "FORBIDDEN"], "needs write:users");
  const self = await post(server, admin, `/api/users/${adminId}/2fa/recover`, {
    password: ADMIN.password,
  });
  assertEquals([self.status, errorCode(self)], [403, "FORBIDDEN"], "not for one's own account");
  const wrong = await post(server, admin, `/api/users/${viewerId}/2fa/recover`, {
    password: VIEWER.password,
  });
  assertEquals([wrong.status, errorCode(wrong)], [403, "PASSWORD_INVALID"]);
  const before = epoch(server, viewerId);
  const r = await post(server, admin, `/api/users/${viewerId}/2fa/recover`, {
    password: ADMIN.password,
  });
  assertEquals(r.status, 200);
  assertEquals((r.body.user as { totp_enabled: boolean }).totp_enabled, false);
  assertEquals(epoch(server, viewerId), before + 1);
  const again = await post(server, admin, `/api/users/${viewerId}/2fa/recover`, {
    password: ADMIN.password,
  });
  assertEquals([again.status, errorCode(again)], [409, "TOTP_NOT_ENABLED"]);
  assertEquals(
    (await callJson(server, "GET", "/api/auth/session", { session: viewerSession })).status,
    401,
  );
  assertEquals((await tryLogin(server, VIEWER)).status, 200, "the password alone works again");

  const [record] = await auditItems(server, admin, "action=user.2fa.recover&result=success");
  assertEquals(record!.actor, { type: "user", id: adminId, name: "admin" });
  assertEquals(record!.target, `user:${viewerId}`);
  const notes = await callJson(server, "GET", "/api/notifications", { session: admin });
  const kinds = (notes.body.items as { kind: string; title: string }[]).map((n) =>
    `${n.kind}: ${n.title}`
  );
  assertEquals(kinds, ["user.2fa.recover: Two-factor authentication turned off for viewer"]);
});

Deno.test("a pending setup expires after 10 minutes, and enable without a setup is refused", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const none = await post(server, admin, `/api/users/${adminId}/2fa/enable`, { code: "123456" });
  assertEquals([none.status, errorCode(none)], [409, "TOTP_SETUP_REQUIRED"]);
  const setup = await post(server, admin, `/api/users/${adminId}/2fa/setup`);
  server.clock.advance(10 * 60_000);
  const late = await post(server, admin, `/api/users/${adminId}/2fa/enable`, {
    code: codeAt(server, setup.body.secret as string),
  });
  assertEquals([late.status, errorCode(late)], [409, "TOTP_SETUP_REQUIRED"]);
  // A new setup replaces the old secret: a code of the first one no longer enables.
  const first = await post(server, admin, `/api/users/${adminId}/2fa/setup`);
  const second = await post(server, admin, `/api/users/${adminId}/2fa/setup`);
  ok(first.body.secret !== second.body.secret);
  const stale = await post(server, admin, `/api/users/${adminId}/2fa/enable`, {
    code: codeAt(server, first.body.secret as string),
  });
  assertEquals(errorCode(stale), "TOTP_INVALID");
  server.clock.advance(STEP);
  const ok2 = await post(server, admin, `/api/users/${adminId}/2fa/enable`, {
    code: codeAt(server, second.body.secret as string),
  });
  assertEquals(ok2.status, 200);
  const twice = await post(server, admin, `/api/users/${adminId}/2fa/setup`);
  assertEquals([twice.status, errorCode(twice)], [409, "TOTP_ALREADY_ENABLED"], "2FA is on");
});

Deno.test("wrong codes are rate-limited: after 5 failures even the right code waits (429 with Retry-After)", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const setup = await post(server, admin, `/api/users/${adminId}/2fa/setup`);
  const secret = setup.body.secret as string;
  const right = codeAt(server, secret);
  const wrongCode = right === "000000" ? "111111" : "000000";
  for (let i = 1; i <= 5; i++) {
    const r = await post(server, admin, `/api/users/${adminId}/2fa/enable`, { code: wrongCode });
    assertEquals(errorCode(r), "TOTP_INVALID", `attempt ${i}`);
  }
  const locked = await post(server, admin, `/api/users/${adminId}/2fa/enable`, { code: right });
  assertEquals([locked.status, errorCode(locked)], [429, "TOO_MANY_ATTEMPTS"]);
  assertEquals(locked.res.headers.get("retry-after"), "30");
  server.clock.advance(30_000);
  const r = await post(server, admin, `/api/users/${adminId}/2fa/enable`, {
    code: codeAt(server, secret),
  });
  assertEquals(r.status, 200);
});

Deno.test("wrong codes at login are rate-limited per account too", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  await noCaptcha(server, admin);
  const secret = await enable2fa(server, admin, adminId);
  server.clock.advance(STEP);
  const right = codeAt(server, secret);
  const wrongCode = right === "000000" ? "111111" : "000000";
  for (let i = 1; i <= 5; i++) {
    const r = await tryLogin(server, ADMIN, { totp_code: wrongCode });
    assertEquals(errorCode(r), "TOTP_INVALID", `attempt ${i}`);
  }
  const locked = await tryLogin(server, ADMIN, { totp_code: right });
  assertEquals([locked.status, errorCode(locked)], [429, "TOO_MANY_ATTEMPTS"]);
  ok(Number(locked.res.headers.get("retry-after")) > 0);
});

Deno.test("TOTP secrets are sealed at rest with <data-dir>/totp.key (mode 0600), created on first use", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const keyPath = `${server.dir}/totp.key`;
  assertEquals(await Deno.stat(keyPath).then(() => true, () => false), false);
  const setup = await post(server, admin, `/api/users/${adminId}/2fa/setup`);
  const secret = setup.body.secret as string;
  assertEquals((await Deno.stat(keyPath)).mode! & 0o777, 0o600);
  const pending = server.db.prepare("SELECT value FROM settings WHERE key = ?").get(
    `totp.pending.${adminId}`,
  ) as { value: string };
  ok(!pending.value.includes(secret));
  await post(server, admin, `/api/users/${adminId}/2fa/enable`, { code: codeAt(server, secret) });
  const row = server.db.prepare("SELECT totp_secret_enc FROM users WHERE id = ?").get(adminId) as {
    totp_secret_enc: string;
  };
  assertMatch(row.totp_secret_enc, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
  ok(!row.totp_secret_enc.includes(secret));
  const sealed = row.totp_secret_enc.split(".")[2]!;
  ok(!(fromB64urlText(sealed) ?? "").includes(secret));
  assertEquals(pendingSetups(server), 0, "the pending secret is gone once enabled");
});

Deno.test("a sealed secret copied onto another account does not open there", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const viewerId = await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const secret = await enable2fa(server, admin, adminId);
  server.db.prepare(
    `UPDATE users SET totp_enabled = 1,
       totp_secret_enc = (SELECT totp_secret_enc FROM users WHERE id = ?) WHERE id = ?`,
  ).run(adminId, viewerId);
  server.clock.advance(STEP);
  const r = await tryLogin(server, VIEWER, { totp_code: codeAt(server, secret) });
  assertEquals([r.status, errorCode(r)], [401, "TOTP_INVALID"]);
  ok(server.logs.some((l) => l.includes("two-factor secret cannot be decrypted")));
  const res = await call(server, "POST", "/api/auth/login", {
    body: { ...ADMIN, totp_code: codeAt(server, secret) },
  });
  assertEquals(res.status, 200, "the owner's own secret still works");
  await res.body?.cancel();
});
