import { assertEquals, ok } from "../_helpers/assert.ts";
import { testStore } from "../_helpers/store.ts";
import { createUsersRepo, USER_COLUMNS } from "../../db/users_repo.ts";

function seed(repo: ReturnType<typeof createUsersRepo>) {
  repo.insert({ id: "u1", username: "admin", password_hash: "h", role: "admin", now: 1 });
  return repo.get("u1")!;
}

Deno.test("every credential change advances the credential epoch", async () => {
  await using s = await testStore();
  const repo = createUsersRepo(s.db);
  const start = seed(repo).credential_epoch;
  repo.updatePassword("u1", "h2", 2);
  repo.updateRole("u1", "readonly", 3);
  repo.updateUsername("u1", "root1", 4);
  repo.setDisabled("u1", true, 5);
  repo.setTotp("u1", "enc", 6);
  repo.advanceEpoch("u1", 7);
  const after = repo.get("u1")!;
  assertEquals(after.credential_epoch, start + 6);
  assertEquals(after.updated_at, 7);
  assertEquals(after.username, "root1");
});

Deno.test("a rehash of the same password does not advance the epoch", async () => {
  await using s = await testStore();
  const repo = createUsersRepo(s.db);
  const start = seed(repo).credential_epoch;
  repo.rehashPassword("u1", "stronger");
  assertEquals(repo.get("u1")!.credential_epoch, start);
  assertEquals(repo.get("u1")!.password_hash, "stronger");
});

Deno.test("usernames are looked up byte for byte", async () => {
  await using s = await testStore();
  const repo = createUsersRepo(s.db);
  seed(repo);
  ok(repo.getByUsername("admin"));
  assertEquals(repo.getByUsername("Admin"), undefined);
  assertEquals(repo.getByUsername(" admin"), undefined);
});

Deno.test("revokeAllSessions() revokes every live session of one user", async () => {
  await using s = await testStore();
  const repo = createUsersRepo(s.db);
  const user = seed(repo);
  repo.insert({ id: "u2", username: "other", password_hash: "h", role: "admin", now: 1 });
  for (const [hash, uid] of [["a", "u1"], ["b", "u1"], ["c", "u2"]] as const) {
    repo.insertSession({
      id_hash: hash,
      user_id: uid,
      created_at: 10,
      expires_at: 1000,
      client_ip: null,
      user_agent: null,
      credential_epoch: user.credential_epoch,
    });
  }
  repo.revokeSession("a", 20);
  assertEquals(repo.revokeAllSessions("u1", 30), 1);
  assertEquals(repo.getSession("a")!.revoked_at, 20);
  assertEquals(repo.getSession("b")!.revoked_at, 30);
  assertEquals(repo.getSession("c")!.revoked_at, null);
  assertEquals(repo.purgeSessions(2000, 25), 3);
});

Deno.test("carrySession() moves one live session on from the epoch it was checked at, only", async () => {
  await using s = await testStore();
  const repo = createUsersRepo(s.db);
  const start = seed(repo).credential_epoch;
  for (const hash of ["kept", "other", "revoked"]) {
    repo.insertSession({
      id_hash: hash,
      user_id: "u1",
      created_at: 10,
      expires_at: 1000,
      client_ip: null,
      user_agent: null,
      credential_epoch: start,
    });
  }
  repo.revokeSession("revoked", 11);
  repo.setTotp("u1", "enc", 12);
  assertEquals(repo.carrySession("kept", "u1", start), true);
  assertEquals(repo.carrySession("revoked", "u1", start), false, "a revoked session stays so");
  assertEquals(repo.carrySession("kept", "u2", start), false, "another account's id");
  assertEquals(repo.getSession("kept")!.credential_epoch, start + 1);
  assertEquals(repo.getSession("other")!.credential_epoch, start, "the others stay behind");
  // A second change before the carry: the session was checked at `start`, so it is not at the
  // epoch the carry expects any more, and it does not catch up with the account.
  repo.updatePassword("u1", "h2", 13);
  repo.setTotp("u1", "enc2", 14);
  assertEquals(repo.carrySession("kept", "u1", start + 2), false);
  assertEquals(repo.getSession("kept")!.credential_epoch, start + 1);
});

Deno.test("a session and its user read in one statement equal the two reads", async () => {
  await using s = await testStore();
  const repo = createUsersRepo(s.db);
  const user = seed(repo);
  repo.setTotp("u1", "enc", 3);
  repo.insertSession({
    id_hash: "h1",
    user_id: "u1",
    created_at: 10,
    expires_at: 1000,
    client_ip: "192.0.2.1",
    user_agent: "ua",
    credential_epoch: user.credential_epoch,
  });
  const both = repo.getSessionAndUser("h1")!;
  assertEquals({ ...both.session }, { ...repo.getSession("h1") });
  assertEquals({ ...both.user }, { ...repo.get("u1") });
  // Every column of users is read: a column added later must be added to USER_COLUMNS too.
  assertEquals(Object.keys(repo.get("u1")!).sort(), [...USER_COLUMNS].sort());
  assertEquals(repo.getSessionAndUser("nope"), undefined);
});
