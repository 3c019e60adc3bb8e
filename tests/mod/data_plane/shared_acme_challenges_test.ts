/**
 * HTTP-01 answers shared by a deployment's controllers through the store: the controller that
 * orders adds them, another one serves them after a refresh (what a change notice triggers), a
 * removal reaches it the same way, and a store that fails leaves the ordering controller's own
 * answers working. Runs on SQLite and, in the store contract suite, on PostgreSQL.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import { testStore } from "../../_helpers/store.ts";
import { createAcmeChallengesRepo } from "../../../db/acme_challenges_repo.ts";
import {
  type AcmeChallengeStore,
  createAcmeChallenges,
  shareAcmeChallenges,
} from "../../../mod/data_plane/acme_challenges.ts";

Deno.test("an answer added on one controller is served by another after a refresh, and goes with it", async () => {
  await using store = await testStore();
  let now = Date.UTC(2026, 0, 1);
  const repo = () => createAcmeChallengesRepo(store.db, () => now);
  const warned: string[] = [];
  const a = shareAcmeChallenges(createAcmeChallenges(), repo(), (m) => warned.push(m));
  const b = shareAcmeChallenges(createAcmeChallenges(), repo(), (m) => warned.push(m));
  a.add("shop.example", "tok1", "tok1.thumb");
  b.add("blog.example", "tok2", "tok2.thumb");
  assertEquals(b.answer("shop.example", "tok1"), undefined, "not before the refresh");
  b.refresh();
  a.refresh();
  assertEquals(b.answer("shop.example", "tok1"), "tok1.thumb");
  assertEquals(a.answer("blog.example", "tok2"), "tok2.thumb");
  a.remove("shop.example", "tok1");
  b.refresh();
  assertEquals(b.answer("shop.example", "tok1"), undefined);
  assertEquals(b.answer("blog.example", "tok2"), "tok2.thumb", "its own answer stays");
  // An answer a dead controller left is dropped after an hour.
  now += 3_600_001;
  a.refresh();
  assertEquals(a.answer("blog.example", "tok2"), undefined);
  assertEquals(b.answer("blog.example", "tok2"), "tok2.thumb", "the living owner still answers");
  assertEquals(warned, []);
});

Deno.test("a failing store leaves the ordering controller's answers working, and says so", () => {
  const failing: AcmeChallengeStore = {
    put: () => {
      throw new Error("store down");
    },
    delete: () => {
      throw new Error("store down");
    },
    all: () => [],
  };
  const warned: string[] = [];
  const a = shareAcmeChallenges(createAcmeChallenges(), failing, (m) => warned.push(m));
  a.add("shop.example", "tok1", "tok1.thumb");
  assertEquals(a.answer("shop.example", "tok1"), "tok1.thumb");
  a.remove("shop.example", "tok1");
  assertEquals(a.answer("shop.example", "tok1"), undefined);
  assertEquals(warned, [
    "the ACME challenge could not be shared with the other controllers",
    "the ACME challenge could not be removed from the store",
  ]);
});
