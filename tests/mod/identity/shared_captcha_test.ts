/**
 * The login CAPTCHA with its spent ids in the store (db/spent_ids_repo.ts), as every controller
 * of a deployment composes it: two instances on one store stand for two controllers behind a load
 * balancer. A challenge fetched from one is answered on the other and its receipt spent on either,
 * each once; a restart (a new instance) keeps both; the sweep forgets what expired. Runs on SQLite
 * and, in the store contract suite, on PostgreSQL.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { testStore } from "../../_helpers/store.ts";
import { createSpentIdsRepo } from "../../../db/spent_ids_repo.ts";
import {
  CAPTCHA_TTL_MS,
  CaptchaError,
  createCaptcha,
  solveChallenge,
} from "../../../mod/identity/captcha.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { systemRandom } from "../../../mod/core/random.ts";

const key = new Uint8Array(32).fill(9);

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof CaptchaError) return err.reason;
    throw err;
  }
  return "accepted";
}

Deno.test("a challenge from one controller is answered on another, and each id is spent once", async () => {
  await using store = await testStore();
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const make = () =>
    createCaptcha({ key, clock, random: systemRandom, spent: createSpentIdsRepo(store.db) });
  const a = make();
  const b = make();
  const c = a.challenge("10.0.0.1", 6);
  const answer = {
    challenge: c.challenge,
    nonce: solveChallenge(c.challenge, 6),
    username: "admin",
    clientIp: "10.0.0.1",
  };
  const { receipt } = b.verify(answer);
  assertEquals(reason(() => a.verify(answer)), "reused", "the challenge is spent for both");
  assertEquals(reason(() => a.consumeReceipt(receipt, "admin", "10.0.0.1")), "accepted");
  assertEquals(reason(() => b.consumeReceipt(receipt, "admin", "10.0.0.1")), "reused");
  // A restart forgets nothing: the receipt is still spent for a new instance.
  assertEquals(reason(() => make().consumeReceipt(receipt, "admin", "10.0.0.1")), "reused");
  const spentRows = () =>
    Number(
      (store.db.prepare("SELECT COUNT(*) AS n FROM settings WHERE key LIKE 'spent.%'").get() as {
        n: number;
      }).n,
    );
  assertEquals(spentRows(), 2);
  a.sweep();
  assertEquals(spentRows(), 2, "nothing expired yet");
  clock.advance(CAPTCHA_TTL_MS + 1);
  b.sweep();
  assertEquals(spentRows(), 0);
});

Deno.test("the spent-ids store spends an id once per kind", async () => {
  await using store = await testStore();
  const repo = createSpentIdsRepo(store.db);
  ok(repo.spend("k", "id1", 100));
  ok(!repo.spend("k", "id1", 200));
  ok(repo.spend("other", "id1", 100), "kinds are apart");
  assertEquals(repo.sweep("k", 99), 0);
  assertEquals(repo.sweep("k", 100), 1);
  ok(repo.spend("k", "id1", 300), "a swept id may come again (it has expired)");
});
