import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { ADMIN, callJson, completeSetup, login, type Session } from "../../_helpers/identity.ts";
import { createTestApp, type TestBase } from "../../_helpers/server.ts";

const PASSWORD = "Glacier-Moth-42";
const code = (r: { body: Record<string, unknown> }) => (r.body.error as { code: string }).code;

async function ready(): Promise<{ server: TestBase; admin: Session }> {
  const server = await createTestApp({
    areas: ["identity"],
    config: {
      apisec: {
        permissions: {
          admin: ["*"],
          readonly: ["read:*", "read:cluster"],
          "ops.team": ["read:sites", "write:sites"],
        },
      },
    },
  });
  await completeSetup(server);
  return { server, admin: await login(server, ADMIN.username, ADMIN.password) };
}

const create = (server: TestBase, admin: Session, body: Record<string, unknown>) =>
  callJson(server, "POST", "/api/users", { session: admin, body });

Deno.test("POST /api/users creates an account and returns only public fields", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const r = await create(server, admin, {
    username: "viewer",
    password: PASSWORD,
    role: "readonly",
  });
  assertEquals(r.status, 201);
  assertEquals(Object.keys(r.body).sort(), [
    "created_at",
    "disabled",
    "id",
    "role",
    "totp_enabled",
    "updated_at",
    "username",
  ]);
  assertEquals(r.body.totp_enabled, false);
  assertMatch(r.body.created_at as string, /^\d{4}-\d\d-\d\dT/);
  const list = await callJson(server, "GET", "/api/users", { session: admin });
  const items = list.body.items as Record<string, unknown>[];
  assertEquals(items.map((u) => u.username), ["admin", "viewer"]);
  ok(!JSON.stringify(list.body).includes("pbkdf2"));
  const one = await callJson(server, "GET", `/api/users/${r.body.id}`, { session: admin });
  assertEquals(one.body, r.body);
  assertEquals((await callJson(server, "GET", "/api/users/nope", { session: admin })).status, 404);
});

Deno.test("POST /api/users refuses every username rule violation with 400 USERNAME_INVALID", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const bad = [
    "ab",
    "a".repeat(33),
    "1abc",
    "abc.",
    "a/bc",
    " viewer",
    "viewer ",
    "vie wer",
    "viewer\u00a0",
    "vie\u2003wer",
    "vie\u200bwer",
    "\ufeffviewer",
    "view\u0007er",
    "v\u00efewer",
    "",
  ];
  for (const username of bad) {
    const r = await create(server, admin, { username, password: PASSWORD, role: "readonly" });
    assertEquals(r.status, 400, JSON.stringify(username));
    assertEquals(code(r), "USERNAME_INVALID", JSON.stringify(username));
  }
  assertEquals(server.identity.users.list().length, 1);
});

Deno.test("POST /api/users refuses a role that is not exactly a configured key with 400 ROLE_INVALID", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const bad = [
    "",
    "ghost",
    "Admin",
    "ADMIN",
    "*",
    "read:*",
    "admin/x",
    "ops:team",
    " admin",
    "admin ",
    "ad min",
    "admin\u00a0",
    "\u2003admin",
    "ad\u200bmin",
    "admin\ufeff",
    "admin\u0000",
    "ops.team ",
  ];
  for (const role of bad) {
    const r = await create(server, admin, { username: "viewer", password: PASSWORD, role });
    assertEquals(r.status, 400, JSON.stringify(role));
    assertEquals(code(r), "ROLE_INVALID", JSON.stringify(role));
  }
  const custom = await create(server, admin, {
    username: "ops1",
    password: PASSWORD,
    role: "ops.team",
  });
  assertEquals(custom.status, 201);
});

Deno.test("POST /api/users refuses a weak password with 400 PASSWORD_POLICY listing the failed rules", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const cases: [string, string[]][] = [
    ["Short-1a", ["min_length"]],
    ["alllowercaseletters", ["character_classes"]],
    ["Password-2026", ["common_password"]],
    ["Xabcdef-Q9z", ["sequence"]],
    ["Zqwerty-91x", ["keyboard_walk"]],
    ["Riveraaaa-92", ["repeated_run"]],
    ["My-Viewer-Pass-7", ["contains_username"]],
  ];
  for (const [password, rules] of cases) {
    const r = await create(server, admin, { username: "viewer", password, role: "readonly" });
    assertEquals(r.status, 400, password);
    const error = r.body.error as { code: string; rules: string[] };
    assertEquals(error.code, "PASSWORD_POLICY");
    for (const rule of rules) ok(error.rules.includes(rule), `${password}: ${error.rules}`);
  }
});

Deno.test("usernames are unique, compared exactly", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const dup = await create(server, admin, {
    username: "admin",
    password: PASSWORD,
    role: "readonly",
  });
  assertEquals(dup.status, 409);
  assertEquals(code(dup), "USERNAME_TAKEN");
  const cased = await create(server, admin, {
    username: "Admin",
    password: PASSWORD,
    role: "readonly",
  });
  assertEquals(cased.status, 201);
});

Deno.test("PUT /api/users/{id} validates like POST and changes role, password and username", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const id =
    (await create(server, admin, { username: "viewer", password: PASSWORD, role: "readonly" }))
      .body.id;
  const put = (body: Record<string, unknown>) =>
    callJson(server, "PUT", `/api/users/${id}`, { session: admin, body });
  assertEquals(code(await put({ username: "viewer\u200b" })), "USERNAME_INVALID");
  assertEquals(code(await put({ role: "readonly " })), "ROLE_INVALID");
  assertEquals(code(await put({ password: "Viewer-Pass-77" })), "PASSWORD_POLICY");
  assertEquals(code(await put({ username: "admin" })), "USERNAME_TAKEN");
  assertEquals(code(await put({ extra: true })), "BAD_REQUEST");
  const r = await put({ username: "watcher", role: "ops.team", password: "Pebble-Lantern-5" });
  assertEquals(r.status, 200);
  assertEquals([r.body.username, r.body.role], ["watcher", "ops.team"]);
  await login(server, "watcher", "Pebble-Lantern-5");
  assertEquals(
    (await callJson(server, "PUT", "/api/users/none", { session: admin, body: {} })).status,
    404,
  );
});

Deno.test("PUT /api/users/{id} takes back the user GET answers; its read-only fields cannot change", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const id =
    (await create(server, admin, { username: "viewer", password: PASSWORD, role: "readonly" }))
      .body.id as string;
  const read = (await callJson(server, "GET", `/api/users/${id}`, { session: admin })).body;
  const put = (body: Record<string, unknown>) =>
    callJson(server, "PUT", `/api/users/${id}`, { session: admin, body });
  const same = await put(read);
  assertEquals(same.status, 200, JSON.stringify(same.body));
  const promoted = await put({ ...read, role: "admin", updated_at: "2000-01-01T00:00:00.000Z" });
  assertEquals([promoted.status, promoted.body.role], [200, "admin"]);
  const field = (r: { body: Record<string, unknown> }) => (r.body.error as { field: string }).field;
  const otherId = await put({ ...read, id: "someone-else" });
  assertEquals([otherId.status, code(otherId), field(otherId)], [400, "BAD_REQUEST", "id"]);
  const totp = await put({ ...read, totp_enabled: true });
  assertEquals([totp.status, field(totp)], [400, "totp_enabled"]);
  ok(/2fa\/enable/.test((totp.body.error as { message: string }).message));
  assertEquals(server.identity.users.get(id).totp_enabled, false);
});

Deno.test("PUT /api/users/{id} cannot keep, pick or repair a non-canonical historical username", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  // An account imported from an older release with a name today's rule refuses.
  const id =
    (await create(server, admin, { username: "legacy", password: PASSWORD, role: "readonly" }))
      .body.id as string;
  server.db.prepare("UPDATE users SET username = ? WHERE id = ?").run(" legacy", id);
  const keep = await callJson(server, "PUT", `/api/users/${id}`, {
    session: admin,
    body: { username: " legacy", role: "admin" },
  });
  assertEquals(keep.status, 400);
  assertEquals(code(keep), "USERNAME_INVALID");
  assertEquals(server.identity.users.get(id).role, "readonly");
  // Nor repair it: that is `waf user repair-username` (revocation and repair record together).
  const repair = await callJson(server, "PUT", `/api/users/${id}`, {
    session: admin,
    body: { username: "legacy" },
  });
  assertEquals(repair.status, 400);
  assertEquals(code(repair), "USERNAME_INVALID");
  ok(/repair-username/.test((repair.body.error as { message: string }).message));
  assertEquals(server.identity.users.get(id).username, " legacy");
  // Other changes to the account stay possible (an operator can still disable it).
  const other = await callJson(server, "PUT", `/api/users/${id}`, {
    session: admin,
    body: { role: "admin", disabled: true },
  });
  assertEquals(other.status, 200);
  assertEquals([other.body.username, other.body.role], [" legacy", "admin"]);
});

Deno.test("the last account that can manage users cannot lose that role", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const me = (await callJson(server, "GET", "/api/auth/session", { session: admin })).body.user as {
    id: string;
  };
  const r = await callJson(server, "PUT", `/api/users/${me.id}`, {
    session: admin,
    body: { role: "readonly" },
  });
  assertEquals(r.status, 409);
  assertEquals(code(r), "LAST_ADMIN");
});

Deno.test("every user mutation writes one audit record with actor, target, result, client and trace id", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const created = await create(server, admin, {
    username: "viewer",
    password: PASSWORD,
    role: "readonly",
  });
  const id = created.body.id as string;
  await create(server, admin, { username: "bad name", password: PASSWORD, role: "readonly" });
  const updated = await callJson(server, "PUT", `/api/users/${id}`, {
    session: admin,
    body: { role: "admin" },
  });
  const rows = server.db.prepare(
    "SELECT * FROM audit_log WHERE action LIKE 'user.%' ORDER BY id",
  ).all() as Record<string, string | null>[];
  assertEquals(rows.map((r) => `${r.action}:${r.result}`), [
    "user.create:success",
    "user.create:failure",
    "user.update:success",
  ]);
  const adminId = (server.identity.users.list().find((u) => u.username === "admin"))!.id;
  for (const r of rows) {
    assertEquals([r.actor_type, r.actor_id, r.actor_name], ["user", adminId, "admin"]);
    assertEquals(r.client_ip, "127.0.0.1");
  }
  assertEquals(rows[0]!.target, `user:${id}`);
  assertEquals(rows[0]!.trace_id, created.res.headers.get("x-waf-trace-id"));
  assertEquals(rows[2]!.trace_id, updated.res.headers.get("x-waf-trace-id"));
  assertMatch(rows[1]!.detail!, /USERNAME_INVALID/);
  assertMatch(rows[2]!.detail!, /"previous_role":"readonly"/);
  ok(!JSON.stringify(rows).includes(PASSWORD));
});

Deno.test("audit records are append-only", async () => {
  const { server } = await ready();
  await using _ = server;
  let refused = 0;
  for (const sql of ["UPDATE audit_log SET result = 'success'", "DELETE FROM audit_log"]) {
    try {
      server.db.exec(sql);
    } catch {
      refused++;
    }
  }
  assertEquals(refused, 2);
});
