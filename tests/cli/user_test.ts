import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { ADMIN, callJson, completeSetup, createUser, login } from "../_helpers/identity.ts";
import { startTestServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp.ts";
import { openStore } from "../../db/store.ts";
import { verifyPassword } from "../../mod/identity/password_hash.ts";
import { checkPassword } from "../../mod/identity/password_policy.ts";

const NEW_PASSWORD = "Vivid-Lantern-73";

interface UserState {
  id: string;
  username: string;
  password_hash: string;
  role: string;
  disabled: number;
  totp_enabled: number;
  totp_secret_enc: string | null;
  credential_epoch: number;
}

function user(dir: string, username: string): UserState | undefined {
  const db = new DatabaseSync(`${dir}/waf.db`, { readOnly: true });
  try {
    const row = db.prepare(
      "SELECT id, username, password_hash, role, disabled, totp_enabled, totp_secret_enc, credential_epoch FROM users WHERE username = ?",
    ).get(username);
    return row ? { ...row } as unknown as UserState : undefined;
  } finally {
    db.close();
  }
}

function audit(dir: string, action: string): Record<string, unknown>[] {
  const db = new DatabaseSync(`${dir}/waf.db`, { readOnly: true });
  try {
    return db.prepare("SELECT * FROM audit_log WHERE action = ? ORDER BY id").all(action).map((
      r,
    ) => ({
      ...r,
    }));
  } finally {
    db.close();
  }
}

/** A server with setup complete (account "admin") and a live session for it. */
async function serverWithSession() {
  const server = await startTestServer();
  await completeSetup(server);
  const session = await login(server, ADMIN.username, ADMIN.password);
  assertEquals((await callJson(server, "GET", "/api/auth/session", { session })).status, 200);
  return { server, session };
}

Deno.test("waf user password --password-stdin sets the password and ends live server sessions", async () => {
  const { server, session } = await serverWithSession();
  await using _ = server;
  const before = user(server.dir, "admin")!;
  const r = await cli(["user", "password", "admin", "--password-stdin", "--data-dir", server.dir], {
    stdin: `${NEW_PASSWORD}\n`,
    env: { osUser: "ops" },
  });
  assertEquals(r.code, 0, r.stderr);
  assertMatch(
    r.stdout,
    /Password of "admin" changed; its existing sessions end at their next request/,
  );
  const after = user(server.dir, "admin")!;
  ok(await verifyPassword(NEW_PASSWORD, after.password_hash));
  assertEquals(after.credential_epoch, before.credential_epoch + 1);
  // The running server refuses the old session at its next request, and the new password works.
  assertEquals((await callJson(server, "GET", "/api/auth/session", { session })).status, 401);
  const fresh = await login(server, "admin", NEW_PASSWORD);
  assertEquals(
    (await callJson(server, "GET", "/api/auth/session", { session: fresh })).status,
    200,
  );
  const records = audit(server.dir, "user.password");
  assertEquals(records.length, 1);
  assertEquals(records[0]!["actor_type"], "cli");
  assertMatch(String(records[0]!["actor_name"]), /^ops \(uid \d+\)$/);
  ok(!String(records[0]!["detail"]).includes(NEW_PASSWORD));
});

Deno.test("waf user password needs exactly one input mode", async () => {
  await using dir = await tempDir();
  const args = ["user", "password", "admin", "--data-dir", `${dir}`];
  assertEquals((await cli(args)).code, 2);
  const two = await cli([...args, "--generate", "--password-stdin"], { stdin: "x" });
  assertEquals(two.code, 2);
  assertMatch(two.stderr, /Exactly one of --password-stdin, --password, --generate is required/);
  assertEquals((await cli([...args, "--password", "a", "--generate"])).code, 2);
  assertEquals((await cli([...args, "--password-stdin"], { stdin: "\n" })).code, 2);
  assertEquals((await cli(["user", "password", "--generate", "--data-dir", `${dir}`])).code, 2);
});

Deno.test("waf user password --generate prints a policy-compliant password once; --password warns", async () => {
  await using dir = await tempDir();
  assertEquals(
    (await cli(["user", "ensure-admin", "root-admin", "--password-stdin", "--data-dir", `${dir}`], {
      stdin: ADMIN.password,
    })).code,
    0,
  );
  const r = await cli(["user", "password", "root-admin", "--generate", "--data-dir", `${dir}`]);
  assertEquals(r.code, 0, r.stderr);
  const m = /Generated password \(shown only this once\):\n(\S+)\n$/.exec(r.stdout);
  ok(m, r.stdout);
  const generated = m[1]!;
  assertEquals(checkPassword(generated, "root-admin"), []);
  ok(await verifyPassword(generated, user(dir, "root-admin")!.password_hash));
  assertEquals(r.stdout.split(generated).length, 2, "printed exactly once");

  const inline = await cli([
    "user",
    "password",
    "root-admin",
    "--password",
    NEW_PASSWORD,
    "--data-dir",
    `${dir}`,
  ]);
  assertEquals(inline.code, 0);
  assertMatch(inline.stderr, /visible in the process list/);
  ok(await verifyPassword(NEW_PASSWORD, user(dir, "root-admin")!.password_hash));
});

Deno.test("waf user password enforces the policy and changes nothing when it fails", async () => {
  await using dir = await tempDir();
  await cli(["user", "ensure-admin", "operator", "--password-stdin", "--data-dir", `${dir}`], {
    stdin: ADMIN.password,
  });
  const before = user(dir, "operator")!;
  const r = await cli(
    ["user", "password", "operator", "--password-stdin", "--data-dir", `${dir}`],
    {
      stdin: "operator1234",
    },
  );
  assertEquals(r.code, 1);
  assertMatch(r.stderr, /The password does not meet the policy:/);
  assertMatch(r.stderr, /must neither equal nor contain the username/);
  assertMatch(r.stderr, /no runs of 4 or more consecutive/);
  assertEquals(user(dir, "operator"), before);
  const zh = await cli(
    ["user", "password", "operator", "--password-stdin", "--data-dir", `${dir}`],
    {
      stdin: "short",
      env: { lang: "zh-CN" },
    },
  );
  assertMatch(zh.stderr, /密码不符合密码策略：\n {2}- 至少 10 个字符/);
});

Deno.test("waf user password --reset-2fa turns TOTP off; a missing account is exit 1", async () => {
  await using dir = await tempDir();
  await cli(["user", "ensure-admin", "operator", "--password-stdin", "--data-dir", `${dir}`], {
    stdin: ADMIN.password,
  });
  const db = openStore(`${dir}/waf.db`, { now: Date.now() });
  db.prepare(
    "UPDATE users SET totp_enabled = 1, totp_secret_enc = 'enc:secret' WHERE username = 'operator'",
  )
    .run();
  db.close();
  const before = user(dir, "operator")!;
  const r = await cli([
    "user",
    "password",
    "operator",
    "--password-stdin",
    "--reset-2fa",
    "--data-dir",
    `${dir}`,
  ], { stdin: NEW_PASSWORD });
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /Two-factor authentication \(TOTP\) is now off/);
  const after = user(dir, "operator")!;
  assertEquals([after.totp_enabled, after.totp_secret_enc], [0, null]);
  ok(after.credential_epoch > before.credential_epoch);

  const missing = await cli([
    "user",
    "password",
    "Operator",
    "--password-stdin",
    "--data-dir",
    `${dir}`,
  ], {
    stdin: NEW_PASSWORD,
  });
  assertEquals(missing.code, 1);
  assertMatch(missing.stderr, /No account is named "Operator"/);
});

Deno.test("waf user ensure-admin creates the first admin on a fresh host and completes setup", async () => {
  await using tmp = await tempDir();
  const dir = `${tmp}/data`;
  const r = await cli(["user", "ensure-admin", "chief", "--password-stdin", "--data-dir", dir], {
    stdin: `${NEW_PASSWORD}\n`,
  });
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /Created the admin account "chief" \(id [0-9a-f]{32}\)/);
  const row = user(dir, "chief")!;
  assertEquals([row.role, row.disabled], ["admin", 0]);
  ok(await verifyPassword(NEW_PASSWORD, row.password_hash));
  assertEquals(audit(dir, "user.create").length, 1);

  // The new admin can sign in to a server started on this data directory.
  await using server = await startTestServer({ dir });
  const session = await login(server, "chief", NEW_PASSWORD);
  assertEquals((await callJson(server, "GET", "/api/auth/session", { session })).status, 200);
});

Deno.test("waf user ensure-admin makes an existing account an enabled admin with the new password", async () => {
  const { server, session } = await serverWithSession();
  await using _ = server;
  await createUser(server, "viewer", "Glacier-Moth-42", "readonly");
  const viewer = await login(server, "viewer", "Glacier-Moth-42");
  const db = openStore(`${server.dir}/waf.db`, { now: Date.now() });
  db.prepare("UPDATE users SET disabled = 1 WHERE username = 'viewer'").run();
  db.close();
  const r = await cli([
    "user",
    "ensure-admin",
    "viewer",
    "--password-stdin",
    "--data-dir",
    server.dir,
  ], {
    stdin: NEW_PASSWORD,
  });
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /The account "viewer" is now an enabled admin \(was "readonly"\)/);
  const row = user(server.dir, "viewer")!;
  assertEquals([row.role, row.disabled], ["admin", 0]);
  assertEquals(
    (await callJson(server, "GET", "/api/auth/session", { session: viewer })).status,
    401,
  );
  assertEquals((await callJson(server, "GET", "/api/auth/session", { session })).status, 200);
  const again = await login(server, "viewer", NEW_PASSWORD);
  assertEquals((await callJson(server, "GET", "/api/users", { session: again })).status, 200);

  const bad = await cli([
    "user",
    "ensure-admin",
    " viewer",
    "--password-stdin",
    "--data-dir",
    server.dir,
  ], {
    stdin: NEW_PASSWORD,
  });
  assertEquals(bad.code, 1);
  assertMatch(
    bad.stderr,
    /The username "\\u\{20\}viewer" breaks the username rule: it contains the whitespace character U\+0020/,
  );
});

Deno.test("waf user rename renames, revokes the sessions and writes no repair record", async () => {
  const { server, session } = await serverWithSession();
  await using _ = server;
  const before = user(server.dir, "admin")!;
  const r = await cli(["user", "rename", "admin", "chief", "--data-dir", server.dir]);
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /Renamed "admin" to "chief"; 1 session\(s\) revoked/);
  const after = user(server.dir, "chief")!;
  assertEquals(after.id, before.id);
  assertEquals(after.password_hash, before.password_hash);
  ok(after.credential_epoch > before.credential_epoch);
  assertEquals((await callJson(server, "GET", "/api/auth/session", { session })).status, 401);
  await login(server, "chief", ADMIN.password);
  const db = new DatabaseSync(`${server.dir}/waf.db`, { readOnly: true });
  assertEquals({ ...db.prepare("SELECT COUNT(*) AS n FROM username_repairs").get() }, { n: 0 });
  assertEquals(
    {
      ...db.prepare(
        "SELECT COUNT(*) AS n FROM admin_sessions WHERE user_id = ? AND revoked_at IS NULL",
      ).get(before.id),
    },
    { n: 1 },
    "only the new login is live",
  );
  db.close();
  assertEquals(audit(server.dir, "user.rename").length, 1);
});

Deno.test("waf user rename refuses non-canonical names, a taken name and a no-op", async () => {
  await using dir = await tempDir();
  const d = `${dir}`;
  for (const name of ["alice", "bob1"]) {
    await cli(["user", "ensure-admin", name, "--password-stdin", "--data-dir", d], {
      stdin: NEW_PASSWORD,
    });
  }
  const db = openStore(`${d}/waf.db`, { now: Date.now() });
  db.prepare("UPDATE users SET username = ' Bob\u00a0' WHERE username = 'bob1'").run();
  db.close();
  const cases: [string, string, RegExp][] = [
    [" Bob\u00a0", "bob", /"\\u\{20\}Bob\\u\{A0\}" breaks the username rule/],
    ["alice", "Alice ", /"Alice\\u\{20\}" breaks the username rule/],
    ["alice", "1alice", /must start with an ASCII letter/],
    ["alice", "alice", /equals the old one/],
    ["carol", "dave", /No account is named "carol"/],
  ];
  for (const [from, to, re] of cases) {
    const r = await cli(["user", "rename", from, to, "--data-dir", d]);
    assertEquals(r.code, 1, `${from} -> ${to}`);
    assertMatch(r.stderr, re);
  }
  await cli(["user", "ensure-admin", "bob", "--password-stdin", "--data-dir", d], {
    stdin: NEW_PASSWORD,
  });
  const taken = await cli(["user", "rename", "alice", "bob", "--data-dir", d]);
  assertEquals(taken.code, 1);
  assertMatch(taken.stderr, /belongs to another account; accounts are never merged/);
  ok(user(d, "alice"));
  assertEquals((await cli(["user", "rename", "alice", "--data-dir", d])).code, 2);
});
