/**
 * No privilege escalation through user management (issue #37, item 2): a caller creates or
 * changes an account only to a role it holds entirely, changes an account (its password, 2FA,
 * role, name or disabled state) only when that account's role holds nothing the caller lacks,
 * confirms its own password change with the current password, and an administrator's password
 * set by someone else is audited and notified.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { as, auditItems, codeAt, errorCode, mintToken, VIEWER } from "../../_helpers/api_access.ts";
import {
  ADMIN,
  callJson,
  completeSetup,
  createUser,
  login,
  type Session,
} from "../../_helpers/identity.ts";
import { createTestApp, type TestTarget } from "../../_helpers/server.ts";

const ROLES = {
  admin: ["*"],
  readonly: ["read:*", "read:cluster"],
  usermgr: ["read:users", "write:users"],
};
const MANAGER = { username: "manager", password: "Pebble-Lantern-5" } as const;
const NEW_PASSWORD = "Harbour-Quill-73";

interface Ready {
  server: TestTarget;
  admin: Session;
  adminId: string;
  viewerId: string;
  managerId: string;
}

async function ready(): Promise<Ready> {
  const server = await createTestApp({
    config: { apisec: { permissions: ROLES, management_api: { enabled: true } } },
  });
  await completeSetup(server);
  const viewerId = await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  const managerId = await createUser(server, MANAGER.username, MANAGER.password, "usermgr");
  const admin = await login(server, ADMIN.username, ADMIN.password);
  const adminId = server.identity.users.list().find((u) => u.username === ADMIN.username)!.id;
  return { server, admin, adminId, viewerId, managerId };
}

const usersToken = async (server: TestTarget, admin: Session) =>
  (await mintToken(server, admin, { note: "users", permissions: ["read:users", "write:users"] }))
    .token;

const canSignIn = async (server: TestTarget, username: string, password: string) =>
  (await callJson(server, "POST", "/api/auth/login", { body: { username, password } })).status ===
    200;

Deno.test("a read:users+write:users token cannot create an administrator (403 PERMISSION_ESCALATION)", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const token = await usersToken(server, admin);
  const r = await callJson(
    server,
    "POST",
    "/api/users",
    as(token, { username: "mallory", password: NEW_PASSWORD, role: "admin" }),
  );
  assertEquals([r.status, errorCode(r)], [403, "PERMISSION_ESCALATION"]);
  const error = r.body.error as { message: string; permissions: string[]; trace_id: string };
  assertEquals(error.permissions, ["*"]);
  assertMatch(error.message, /role "admin"/);
  ok(error.trace_id);
  assertEquals(server.identity.users.list().some((u) => u.username === "mallory"), false);
  assertEquals(await canSignIn(server, "mallory", NEW_PASSWORD), false);
  // A role it holds entirely is fine, and so is one narrower than its own.
  const peer = await callJson(
    server,
    "POST",
    "/api/users",
    as(token, { username: "peer", password: NEW_PASSWORD, role: "usermgr" }),
  );
  assertEquals(peer.status, 201);
  const trail = await auditItems(server, admin, "action=user.create&result=failure");
  assertEquals(trail.map((i) => i.detail.code), ["PERMISSION_ESCALATION"]);
});

Deno.test("a read:users+write:users token cannot promote any user to admin nor to a wider role", async () => {
  const { server, admin, viewerId, managerId } = await ready();
  await using _ = server;
  const token = await usersToken(server, admin);
  for (const [id, role] of [[managerId, "admin"], [managerId, "readonly"]] as const) {
    const r = await callJson(server, "PUT", `/api/users/${id}`, as(token, { role }));
    assertEquals([r.status, errorCode(r)], [403, "PERMISSION_ESCALATION"], role);
  }
  // The viewer's role holds read:* the token lacks: the token changes nothing of that account.
  const demote = await callJson(
    server,
    "PUT",
    `/api/users/${viewerId}`,
    as(token, { role: "usermgr" }),
  );
  assertEquals([demote.status, errorCode(demote)], [403, "PERMISSION_ESCALATION"]);
  assertEquals(server.identity.users.get(managerId).role, "usermgr");
  assertEquals(server.identity.users.get(viewerId).role, "readonly");
});

Deno.test("a read:users+write:users token cannot set an administrator's password", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const token = await usersToken(server, admin);
  const r = await callJson(
    server,
    "PUT",
    `/api/users/${adminId}`,
    as(token, { password: NEW_PASSWORD }),
  );
  assertEquals([r.status, errorCode(r)], [403, "PERMISSION_ESCALATION"]);
  assertEquals(await canSignIn(server, ADMIN.username, NEW_PASSWORD), false);
  assertEquals(await canSignIn(server, ADMIN.username, ADMIN.password), true);
});

Deno.test("a user manager signed in cannot rename, disable or set the password of an administrator", async () => {
  const { server, adminId, managerId } = await ready();
  await using _ = server;
  const manager = await login(server, MANAGER.username, MANAGER.password);
  for (
    const body of [
      { password: NEW_PASSWORD },
      { username: "renamed" },
      { disabled: true },
      { role: "usermgr" },
    ]
  ) {
    const r = await callJson(server, "PUT", `/api/users/${adminId}`, { session: manager, body });
    assertEquals([r.status, errorCode(r)], [403, "PERMISSION_ESCALATION"], JSON.stringify(body));
  }
  const self = await callJson(server, "PUT", `/api/users/${managerId}`, {
    session: manager,
    body: { role: "admin" },
  });
  assertEquals([self.status, errorCode(self)], [403, "PERMISSION_ESCALATION"]);
  const u = server.identity.users.get(adminId);
  assertEquals([u.username, u.disabled, u.role], [ADMIN.username, false, "admin"]);
});

Deno.test("a user manager cannot set up, enable, disable or recover an administrator's 2FA", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const setup = await callJson(server, "POST", `/api/users/${adminId}/2fa/setup`, {
    session: admin,
    body: {},
  });
  await callJson(server, "POST", `/api/users/${adminId}/2fa/enable`, {
    session: admin,
    body: { code: codeAt(server, setup.body.secret as string) },
  });
  assertEquals(server.identity.users.get(adminId).totp_enabled, true);
  const manager = await login(server, MANAGER.username, MANAGER.password);
  const calls: [string, Record<string, unknown>][] = [
    ["setup", {}],
    ["enable", { code: "123456" }],
    ["disable", { password: MANAGER.password }],
    ["recover", { password: MANAGER.password }],
  ];
  for (const [action, body] of calls) {
    const r = await callJson(server, "POST", `/api/users/${adminId}/2fa/${action}`, {
      session: manager,
      body,
    });
    assertEquals([r.status, errorCode(r)], [403, "PERMISSION_ESCALATION"], action);
  }
  assertEquals(server.identity.users.get(adminId).totp_enabled, true);
  // The manager's own peers and narrower accounts stay its to manage.
  const peerId = await createUser(server, "peer", NEW_PASSWORD, "usermgr");
  const peerSetup = await callJson(server, "POST", `/api/users/${peerId}/2fa/setup`, {
    session: manager,
    body: {},
  });
  assertEquals(peerSetup.status, 201);
});

Deno.test("changing one's own password asks for current_password; a readonly user changes only that", async () => {
  const { server, viewerId } = await ready();
  await using _ = server;
  const viewer = await login(server, VIEWER.username, VIEWER.password);
  const put = (body: Record<string, unknown>) =>
    callJson(server, "PUT", `/api/users/${viewerId}`, { session: viewer, body });
  const missing = await put({ password: NEW_PASSWORD });
  assertEquals([missing.status, errorCode(missing)], [400, "BAD_REQUEST"]);
  assertEquals((missing.body.error as { field: string }).field, "current_password");
  const wrong = await put({ password: NEW_PASSWORD, current_password: "Not-The-Pass-1" });
  assertEquals([wrong.status, errorCode(wrong)], [403, "PASSWORD_INVALID"]);
  assertEquals((wrong.body.error as { field: string }).field, "current_password");
  // Without write:users the owner changes nothing else of the account.
  for (const body of [{ role: "admin" }, { username: "viewer2" }, { disabled: true }]) {
    const r = await put({ ...body });
    assertEquals(r.status, 403, JSON.stringify(body));
  }
  const right = await put({ password: NEW_PASSWORD, current_password: VIEWER.password });
  assertEquals(right.status, 200, JSON.stringify(right.body));
  assertEquals(await canSignIn(server, VIEWER.username, NEW_PASSWORD), true);
  assertEquals(await canSignIn(server, VIEWER.username, VIEWER.password), false);
  // Another account is still out of reach.
  const viewer2 = await login(server, VIEWER.username, NEW_PASSWORD);
  const other = await callJson(server, "PUT", `/api/users/no-such-id`, {
    session: viewer2,
    body: { password: NEW_PASSWORD, current_password: NEW_PASSWORD },
  });
  assertEquals([other.status, errorCode(other)], [403, "FORBIDDEN"]);
});

Deno.test("an administrator changing their own password also confirms the current one", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const r = await callJson(server, "PUT", `/api/users/${adminId}`, {
    session: admin,
    body: { password: NEW_PASSWORD },
  });
  assertEquals([r.status, errorCode(r)], [400, "BAD_REQUEST"]);
  const ok2 = await callJson(server, "PUT", `/api/users/${adminId}`, {
    session: admin,
    body: { password: NEW_PASSWORD, current_password: ADMIN.password },
  });
  assertEquals(ok2.status, 200);
  // current_password belongs to one's own change only.
  const again = await login(server, ADMIN.username, NEW_PASSWORD);
  const viewer = server.identity.users.list().find((u) => u.username === VIEWER.username)!;
  const stray = await callJson(server, "PUT", `/api/users/${viewer.id}`, {
    session: again,
    body: { role: "readonly", current_password: NEW_PASSWORD },
  });
  assertEquals([stray.status, errorCode(stray)], [400, "BAD_REQUEST"]);
  assertEquals((stray.body.error as { field: string }).field, "current_password");
});

Deno.test("an administrator's password set by another administrator is audited as user.password.reset and notified", async () => {
  const { server, admin, adminId } = await ready();
  await using _ = server;
  const secondId = await createUser(server, "second", "Quartz-Falcon-88", "admin");
  const r = await callJson(server, "PUT", `/api/users/${secondId}`, {
    session: admin,
    body: { password: NEW_PASSWORD },
  });
  assertEquals(r.status, 200);
  const resets = await auditItems(server, admin, "action=user.password.reset");
  assertEquals(resets.length, 1);
  assertEquals([resets[0]!.result, resets[0]!.target, resets[0]!.actor.id], [
    "success",
    `user:${secondId}`,
    adminId,
  ]);
  assertEquals(resets[0]!.detail.username, "second");
  ok(!JSON.stringify(resets).includes(NEW_PASSWORD));
  const notes = await callJson(server, "GET", "/api/notifications", { session: admin });
  const items = notes.body.items as { kind: string; level: string; title: string }[];
  assertEquals(items.map((n) => [n.kind, n.level]), [["user.password.reset", "warning"]]);
  assertMatch(items[0]!.title, /second/);
  // A readonly account's password set by an administrator is an ordinary update.
  const viewer = server.identity.users.list().find((u) => u.username === VIEWER.username)!;
  await callJson(server, "PUT", `/api/users/${viewer.id}`, {
    session: admin,
    body: { password: "Saffron-Kettle-19" },
  });
  assertEquals((await auditItems(server, admin, "action=user.password.reset")).length, 1);
});
