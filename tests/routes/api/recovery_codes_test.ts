/**
 * Two-factor recovery codes over HTTP on a real server with a fake clock (issue #36): ten codes
 * issued when 2FA is turned on, kept only as keyed hashes, each signing in once instead of a TOTP
 * code (audited, the count going down), a new set with the password invalidating the old one,
 * and the set gone with 2FA. Turning one's own 2FA on keeps the session that did it.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import {
  auditItems,
  codeAt,
  errorCode,
  notificationKinds,
  signedInAdmin,
  VIEWER,
} from "../../_helpers/api_access.ts";
import { ADMIN, callJson, createUser, login, type Session } from "../../_helpers/identity.ts";
import type { TestBase } from "../../_helpers/server.ts";
import { hmac, sha256Hex } from "../../../mod/core/digest.ts";

const STEP = 30_000;
const CODE = /^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;

const ready = signedInAdmin;

const post = (server: TestBase, session: Session, path: string, body: unknown = {}) =>
  callJson(server, "POST", path, { session, body });

/** Turns 2FA on for the signed-in owner; returns the secret and the enable answer. */
async function enable2fa(server: TestBase, session: Session, id: string) {
  const setup = await post(server, session, `/api/users/${id}/2fa/setup`);
  const secret = setup.body.secret as string;
  const r = await post(server, session, `/api/users/${id}/2fa/enable`, {
    code: codeAt(server, secret),
  });
  if (r.status !== 200) throw new Error(`enable: ${r.status} ${JSON.stringify(r.body)}`);
  return { secret, enabled: r, codes: r.body.recovery_codes as string[] };
}

const tryLogin = (server: TestBase, user: { username: string; password: string }, extra = {}) =>
  callJson(server, "POST", "/api/auth/login", { body: { ...user, ...extra } });

const status = async (server: TestBase, session: Session, id: string) =>
  (await callJson(server, "GET", `/api/users/${id}/2fa/recovery-codes`, { session })).body;

/** Everything the store holds as text: settings, users, sessions, the audit trail. */
function storeText(server: TestBase): string {
  return ["settings", "users", "admin_sessions", "audit_log"].map((table) =>
    JSON.stringify(server.db.prepare(`SELECT * FROM ${table}`).all())
  ).join("\n");
}

Deno.test("turning 2FA on answers ten one-time recovery codes, stored only as keyed hashes", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  assertEquals(await status(server, admin, adminId), {
    totp_enabled: false,
    total: 0,
    remaining: 0,
    created_at: null,
  });
  const { enabled, codes } = await enable2fa(server, admin, adminId);
  assertEquals(enabled.res.headers.get("cache-control"), "no-store");
  assertEquals(codes.length, 10);
  for (const code of codes) assertMatch(code, CODE);
  assertEquals(new Set(codes).size, 10);
  assertEquals(await status(server, admin, adminId), {
    totp_enabled: true,
    total: 10,
    remaining: 10,
    created_at: new Date(server.clock.now()).toISOString(),
  });
  const text = storeText(server);
  for (const code of codes) {
    const plain = code.replaceAll("-", "");
    ok(!text.includes(code) && !text.includes(plain), `the store holds ${code}`);
    ok(!text.includes(sha256Hex(plain)) && !text.includes(sha256Hex(code)), "an unkeyed hash");
  }
  const set = JSON.parse(
    (server.db.prepare("SELECT value FROM settings WHERE key = ?").get(
      `totp.recovery.${adminId}`,
    ) as { value: string }).value,
  );
  assertEquals(set.codes.length, 10);
  ok(set.codes.every((c: { hash: string; used_at: null }) => c.used_at === null));
  // Keyed: without the key file, the store alone cannot test a guess.
  const guess = hmac(new Uint8Array(32), `${adminId}:${codes[0]!.replaceAll("-", "")}`);
  ok(!text.includes(guess));
  ok(!server.logs.join("\n").includes(codes[0]!), "the logs never hold a code");
});

Deno.test("a recovery code signs in once instead of a TOTP code, audited, and the count goes down", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const { codes } = await enable2fa(server, admin, adminId);
  const first = codes[0]!;
  const both = await tryLogin(server, ADMIN, { totp_code: "123456", recovery_code: first });
  assertEquals([both.status, errorCode(both)], [400, "BAD_REQUEST"]);
  const wrong = await tryLogin(server, ADMIN, { recovery_code: "0000-0000-0000" });
  assertEquals([wrong.status, errorCode(wrong)], [401, "RECOVERY_CODE_INVALID"]);
  // Typed by hand: lower case, spaces instead of hyphens, O for 0 and l for 1.
  const typed = first.toLowerCase().replaceAll("-", " ").replaceAll("0", "o").replaceAll("1", "l");
  const signed = await tryLogin(server, ADMIN, { recovery_code: typed });
  assertEquals(signed.status, 200, JSON.stringify(signed.body));
  const again = await tryLogin(server, ADMIN, { recovery_code: first });
  assertEquals([again.status, errorCode(again)], [401, "RECOVERY_CODE_INVALID"], "spent");
  const second = await login(server, ADMIN.username, ADMIN.password, {
    recovery_code: codes[1]!,
  });
  assertEquals((await status(server, second, adminId)).remaining, 8);

  server.identity.refusals.flush();
  const used = await auditItems(server, second, "action=user.2fa.recovery_code.use");
  assertEquals(used.map((i) => [i.actor.id, i.target, i.detail]), [
    [adminId, `user:${adminId}`, { remaining: 8 }],
    [adminId, `user:${adminId}`, { remaining: 9 }],
  ]);
  const logins = await auditItems(server, second, "action=auth.login&result=success");
  assertEquals(logins[0]!.detail, { second_factor: "recovery_code" });
  const refused = await auditItems(server, second, "action=auth.login&result=failure");
  assertEquals(refused.map((i) => (i.detail as { reasons: unknown }).reasons), [
    { recovery_code_invalid: 1, recovery_code_replayed: 1 },
  ]);
  ok(!JSON.stringify(await auditItems(server, second, "limit=500")).includes(first));
});

Deno.test("wrong recovery codes count toward the account's code lockout", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  await callJson(server, "PUT", "/api/auth/captcha-policy", {
    session: admin,
    body: { mode: "never", failures: 3, difficulty: 14 },
  });
  const { codes } = await enable2fa(server, admin, adminId);
  for (let i = 1; i <= 5; i++) {
    const r = await tryLogin(server, ADMIN, { recovery_code: "0000-0000-0000" });
    assertEquals(errorCode(r), "RECOVERY_CODE_INVALID", `attempt ${i}`);
  }
  const locked = await tryLogin(server, ADMIN, { recovery_code: codes[0]! });
  assertEquals([locked.status, errorCode(locked)], [429, "TOO_MANY_ATTEMPTS"]);
  assertEquals((await status(server, admin, adminId)).remaining, 10, "nothing was spent");
});

Deno.test("a new set needs the caller's password and invalidates the old one", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const none = await post(server, admin, `/api/users/${adminId}/2fa/recovery-codes`, {
    password: ADMIN.password,
  });
  assertEquals([none.status, errorCode(none)], [409, "TOTP_NOT_ENABLED"]);
  const { codes: old } = await enable2fa(server, admin, adminId);
  const path = `/api/users/${adminId}/2fa/recovery-codes`;
  const missing = await post(server, admin, path, {});
  assertEquals([missing.status, errorCode(missing)], [400, "BAD_REQUEST"]);
  const wrong = await post(server, admin, path, { password: "Wrong-Horse-99" });
  assertEquals([wrong.status, errorCode(wrong)], [403, "PASSWORD_INVALID"]);
  server.clock.advance(STEP);
  const fresh = await post(server, admin, path, { password: ADMIN.password });
  assertEquals(fresh.status, 201);
  assertEquals(fresh.res.headers.get("cache-control"), "no-store");
  const codes = fresh.body.recovery_codes as string[];
  assertEquals(codes.length, 10);
  ok(codes.every((c) => !old.includes(c)));
  assertEquals([fresh.body.total, fresh.body.remaining], [10, 10]);
  assertEquals(fresh.body.created_at, new Date(server.clock.now()).toISOString());
  const stale = await tryLogin(server, ADMIN, { recovery_code: old[0]! });
  assertEquals([stale.status, errorCode(stale)], [401, "RECOVERY_CODE_INVALID"]);
  assertEquals((await tryLogin(server, ADMIN, { recovery_code: codes[0]! })).status, 200);
  const [record] = await auditItems(
    server,
    admin,
    "action=user.2fa.recovery_codes.regenerate&result=success",
  );
  assertEquals([record!.actor.id, record!.target], [adminId, `user:${adminId}`]);
  const failures = await auditItems(
    server,
    admin,
    "action=user.2fa.recovery_codes.regenerate&result=failure",
  );
  assertEquals(failures.map((i) => i.detail.code).sort(), [
    "BAD_REQUEST",
    "PASSWORD_INVALID",
    "TOTP_NOT_ENABLED",
  ]);
});

Deno.test("recovery codes of another account: its count and a new set need write:users", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const viewerId = await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const viewer = await login(server, VIEWER.username, VIEWER.password);
  const { codes } = await enable2fa(server, viewer, viewerId);
  const path = (id: string) => `/api/users/${id}/2fa/recovery-codes`;
  const peek = await callJson(server, "GET", path(adminId), { session: viewer });
  assertEquals([peek.status, errorCode(peek)], [403, "FORBIDDEN"]);
  assertEquals((await status(server, admin, viewerId)).remaining, 10);
  // An administrator confirms with their own password; the other administrators are told.
  const byAdmin = await post(server, admin, path(viewerId), { password: ADMIN.password });
  assertEquals(byAdmin.status, 201);
  const stale = await tryLogin(server, VIEWER, { recovery_code: codes[0]! });
  assertEquals(errorCode(stale), "RECOVERY_CODE_INVALID");
  assertEquals(await notificationKinds(server, admin), ["user.2fa.recovery_codes.regenerate"]);
});

Deno.test("turning 2FA off deletes the recovery codes; turning it on again makes a new set", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const { secret, codes } = await enable2fa(server, admin, adminId);
  server.clock.advance(STEP);
  const off = await post(server, admin, `/api/users/${adminId}/2fa/disable`, {
    password: ADMIN.password,
    code: codeAt(server, secret),
  });
  assertEquals(off.status, 200);
  const rows = server.db.prepare("SELECT key FROM settings WHERE key LIKE 'totp.recovery.%'")
    .all();
  assertEquals(rows, []);
  const session = await login(server, ADMIN.username, ADMIN.password);
  assertEquals((await status(server, session, adminId)).remaining, 0);
  const again = await enable2fa(server, session, adminId);
  ok(again.codes.every((c) => !codes.includes(c)));
  const stale = await tryLogin(server, ADMIN, { recovery_code: codes[0]! });
  assertEquals(errorCode(stale), "RECOVERY_CODE_INVALID");
});

Deno.test("turning one's own 2FA on keeps that session and ends the account's others", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const other = await login(server, ADMIN.username, ADMIN.password);
  const { enabled } = await enable2fa(server, admin, adminId);
  assertEquals(enabled.body.session_kept, true);
  const me = await callJson(server, "GET", "/api/auth/session", { session: admin });
  assertEquals([me.status, (me.body.user as { totp_enabled: boolean }).totp_enabled], [200, true]);
  const gone = await callJson(server, "GET", "/api/auth/session", { session: other });
  assertEquals(gone.status, 401, "another session of the account ends");
  // For another account nothing of the caller's is carried: that account's sessions all end.
  const viewerId = await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const viewer = await login(server, VIEWER.username, VIEWER.password);
  const forViewer = await enable2fa(server, admin, viewerId);
  assertEquals(forViewer.enabled.body.session_kept, false);
  assertEquals(
    (await callJson(server, "GET", "/api/auth/session", { session: viewer })).status,
    401,
  );
  const [record] = await auditItems(server, admin, "action=user.2fa.enable&result=success");
  assertEquals(record!.detail, { recovery_codes: 10, session_kept: false });
});
