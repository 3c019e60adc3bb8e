import { assertEquals } from "../_helpers/assert.ts";
import { testStore } from "../_helpers/store.ts";
import { createTotpRepo } from "../../db/totp_repo.ts";
import { createUsersRepo } from "../../db/users_repo.ts";

async function setup() {
  const store = await testStore();
  createUsersRepo(store.db).insert({
    id: "u1",
    username: "alice",
    password_hash: "x",
    role: "admin",
    now: 1,
  });
  return { store, repo: createTotpRepo(store.db) };
}

Deno.test("acceptStep() only moves forwards, so each step is accepted once", async () => {
  const { store, repo } = await setup();
  await using _ = store;
  assertEquals(repo.acceptStep("u1", 100), true);
  assertEquals(repo.acceptStep("u1", 100), false, "the same step again");
  assertEquals(repo.acceptStep("u1", 99), false, "an older step");
  assertEquals(repo.acceptStep("u1", 101), true);
  assertEquals(repo.acceptStep("nobody", 1), false);
});

Deno.test("pending setups are replaced per user and swept once expired", async () => {
  const { store, repo } = await setup();
  await using _ = store;
  repo.putPending("u1", { secret_enc: "v1.a.b", expires_at: 50 }, 1);
  repo.putPending("u1", { secret_enc: "v1.c.d", expires_at: 60 }, 2);
  repo.putPending("u2", { secret_enc: "v1.e.f", expires_at: 40 }, 2);
  assertEquals(repo.getPending("u1"), { secret_enc: "v1.c.d", expires_at: 60 });
  assertEquals(repo.sweepPending(50), 1);
  assertEquals(repo.getPending("u2"), undefined);
  assertEquals(repo.sweepPending(60), 1);
  assertEquals(repo.getPending("u1"), undefined);
  repo.putPending("u1", { secret_enc: "v1.g.h", expires_at: 70 }, 3);
  repo.deletePending("u1");
  assertEquals(repo.getPending("u1"), undefined);
});

Deno.test("a recovery set is kept per user beside the pending setup, which the sweep alone clears", async () => {
  const { store, repo } = await setup();
  await using _ = store;
  const set = { created_at: 5, codes: [{ hash: "h1", used_at: null }, { hash: "h2", used_at: 7 }] };
  repo.putRecovery("u1", set, 5);
  repo.putPending("u1", { secret_enc: "v1.a.b", expires_at: 10 }, 5);
  assertEquals(repo.sweepPending(100), 1);
  assertEquals(repo.getRecovery("u1"), set, "the sweep of pending setups leaves it");
  repo.putRecovery("u1", { created_at: 9, codes: [] }, 9);
  assertEquals(repo.getRecovery("u1"), { created_at: 9, codes: [] }, "a new set replaces it");
  repo.deleteRecovery("u1");
  assertEquals(repo.getRecovery("u1"), undefined);
});
