import { DatabaseSync } from "node:sqlite";
import { assertEquals, assertMatch, assertRejects, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { callJson } from "../_helpers/identity.ts";
import { startTestServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp.ts";
import { openStore, schemaVersion } from "../../db/store.ts";
import { createUsersRepo } from "../../db/users_repo.ts";
import { repairUsernameCommand } from "../../cli/user.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { hashPassword } from "../../mod/identity/password_hash.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { SCHEMA_VERSION } from "../../db/migrations.ts";

const NOW = Date.UTC(2026, 0, 1);
/** Breaks today's rule: leading space, NBSP, zero-width space, upper case and a non-ASCII letter. */
const HISTORICAL = " Admin\u00a0\u200bé";
const PASSWORD = "Correct-Horse-9";

/**
 * Builds the historical state the way it arose: the non-canonical name written at schema
 * version 3 (before the rule tightened), then the store migrated to the current version.
 */
async function historicalStore(dir: string): Promise<void> {
  const hash = await hashPassword(PASSWORD, systemRandom);
  const old = openStore(`${dir}/waf.db`, { now: NOW, targetVersion: 3 });
  const insert = old.prepare(
    "INSERT INTO users (id, username, password_hash, role, created_at, updated_at, totp_enabled, totp_secret_enc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  );
  insert.run("u1", HISTORICAL, hash, "admin", NOW, NOW, 1, "enc:totp-secret");
  insert.run("u2", "alice", hash, "readonly", NOW, NOW, 0, null);
  const session = old.prepare(
    "INSERT INTO admin_sessions (id_hash, user_id, created_at, last_seen_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)",
  );
  session.run("s1", "u1", NOW, NOW, NOW + 3_600_000, null);
  session.run("s2", "u1", NOW, NOW, NOW + 3_600_000, null);
  session.run("s3", "u1", NOW, NOW, NOW + 3_600_000, NOW);
  session.run("s4", "u2", NOW, NOW, NOW + 3_600_000, null);
  old.close();
  const db = openStore(`${dir}/waf.db`, { now: NOW });
  assertEquals(schemaVersion(db), SCHEMA_VERSION);
  db.close();
}

/** Everything a repair may touch, to compare before and after. */
function snapshot(dir: string) {
  const db = new DatabaseSync(`${dir}/waf.db`, { readOnly: true });
  try {
    const all = (sql: string) => db.prepare(sql).all().map((r) => ({ ...r }));
    return {
      users: all("SELECT * FROM users ORDER BY id"),
      sessions: all("SELECT * FROM admin_sessions ORDER BY id_hash"),
      repairs: all("SELECT * FROM username_repairs ORDER BY id"),
      audit: all("SELECT * FROM audit_log ORDER BY id"),
    };
  } finally {
    db.close();
  }
}

function repair(dir: string, ...args: string[]) {
  return cli(["user", "repair-username", ...args, "--data-dir", dir], {
    clock: new FakeClock(NOW + 60_000),
    env: { osUser: "ops" },
  });
}

Deno.test("repair-username fixes a historical name in one transaction and records the repair", async () => {
  await using tmp = await tempDir();
  const dir = `${tmp}`;
  await historicalStore(dir);
  const before = snapshot(dir);
  const r = await repair(dir, "u1", "admin", "--reason", "ticket 42: name from v0.3");
  assertEquals(r.code, 0, r.stderr);
  assertMatch(
    r.stdout,
    /Repaired the username of u1: "\\u\{20\}Admin\\u\{A0\}\\u\{200B\}\\u\{E9\}" is now "admin"; 2 session\(s\) revoked/,
  );
  const after = snapshot(dir);
  const [u1Before, u1After] = [before.users[0]!, after.users[0]!];
  assertEquals(u1After["username"], "admin");
  for (
    const column of [
      "id",
      "password_hash",
      "role",
      "totp_enabled",
      "totp_secret_enc",
      "totp_last_step",
      "disabled",
      "created_at",
    ]
  ) {
    assertEquals(u1After[column], u1Before[column], column);
  }
  assertEquals(u1After["credential_epoch"], Number(u1Before["credential_epoch"]) + 1);
  assertEquals(after.users[1], before.users[1], "the other account is untouched");
  const revoked = after.sessions.filter((s) => s["user_id"] === "u1").map((s) => s["revoked_at"]);
  assertEquals(revoked, [NOW + 60_000, NOW + 60_000, NOW]);
  assertEquals(after.sessions.find((s) => s["id_hash"] === "s4")!["revoked_at"], null);
  assertEquals(after.repairs.length, 1);
  const { id: _, os_user, ...record } = after.repairs[0]!;
  assertEquals(record, {
    user_id: "u1",
    old_username: HISTORICAL,
    new_username: "admin",
    reason: "ticket 42: name from v0.3",
    revoked_sessions: 2,
    time: NOW + 60_000,
  });
  assertMatch(String(os_user), /^ops \(uid \d+\)$/);
  const audit = after.audit.filter((a) => a["action"] === "user.repair_username");
  assertEquals(audit.length, 1);
});

Deno.test("repair-username rolls everything back when a failure is injected after the update", async () => {
  await using tmp = await tempDir();
  const dir = `${tmp}`;
  await historicalStore(dir);
  const before = snapshot(dir);
  let reached = false;
  const failing = repairUsernameCommand({
    afterUsernameUpdate: () => {
      reached = true;
      throw new Error("injected failure after the username update");
    },
  });
  await assertRejects(
    () =>
      failing(["u1", "admin", "--reason", "test"], {
        configPath: undefined,
        dataDir: dir,
        logFormat: undefined,
      }, {
        clock: new FakeClock(NOW + 60_000),
        random: systemRandom,
        env: { osUser: "ops" },
        stdout: () => {},
        stderr: () => {},
        readStdin: () => Promise.resolve(""),
      }),
    /injected failure/,
  );
  ok(reached, "the fault point ran after the update");
  assertEquals(snapshot(dir), before);
});

Deno.test("repair-username refuses what it must not do, and changes nothing", async () => {
  await using tmp = await tempDir();
  const dir = `${tmp}`;
  await historicalStore(dir);
  const before = snapshot(dir);
  const cases: [string[], number, RegExp][] = [
    [["u1", "admin"], 2, /Option --reason is required/],
    [["u1", "admin", "--reason", "  "], 2, /Option --reason is required/],
    [["u9", "admin", "--reason", "r"], 1, /No account has the id "u9"/],
    [["U1", "admin", "--reason", "r"], 1, /No account has the id "U1"/],
    [
      ["u2", "alicia", "--reason", "r"],
      1,
      /"alice" already follows the rule: use "waf user rename"/,
    ],
    [
      ["u1", "alice", "--reason", "r"],
      1,
      /"alice" belongs to another account; accounts are never merged/,
    ],
    [
      ["u1", " admin", "--reason", "r"],
      1,
      /breaks the username rule: it contains the whitespace character U\+0020/,
    ],
    [["u1", "Admin\u200b", "--reason", "r"], 1, /control or format character U\+200B/],
    [["u1", "ad", "--reason", "r"], 1, /3 to 32 characters long, not 2/],
    [["u1", "--reason", "r"], 2, /Missing argument/],
  ];
  for (const [args, code, re] of cases) {
    const r = await repair(dir, ...args);
    assertEquals(r.code, code, args.join(" "));
    assertMatch(r.stderr, re, args.join(" "));
  }
  assertEquals(snapshot(dir), before);
});

Deno.test("a repaired account's live server session dies at its next request", async () => {
  await using tmp = await tempDir();
  const dir = `${tmp}`;
  await historicalStore(dir);
  await using server = await startTestServer({ dir });
  // Login refuses a non-canonical name, so the session such an account may still hold (from
  // before the rule tightened) is created through the server's own session service.
  const row = createUsersRepo(server.db).get("u1")!;
  const created = server.identity.sessions.create(row, "127.0.0.1", null);
  const session = {
    cookie: `waf_session=${created.id}; waf_csrf=${created.csrf}`,
    csrf: created.csrf,
    sessionId: created.id,
  };
  assertEquals((await callJson(server, "GET", "/api/auth/session", { session })).status, 200);
  const r = await repair(dir, "u1", "admin", "--reason", "cleanup");
  assertEquals(r.code, 0, r.stderr);
  assertEquals((await callJson(server, "GET", "/api/auth/session", { session })).status, 401);
  // The repaired name and unchanged password are accepted; the unchanged TOTP state then
  // asks for a second factor.
  const again = await callJson(server, "POST", "/api/auth/login", {
    body: { username: "admin", password: PASSWORD },
  });
  assertEquals((again.body.error as { code: string }).code, "TOTP_REQUIRED");
});
