/**
 * The lockout counts in the store: two controllers on one store (two connections; the same
 * schema on PostgreSQL) count one attacker's failures together, keep no username or address in
 * clear, refuse a lock they saw without asking the store again, and the sweep forgets what
 * expired.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { testStore } from "../../_helpers/store.ts";
import { createLockoutRepo } from "../../../db/lockout_repo.ts";
import type { SqliteDb } from "../../../db/store.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createLockout, type LockoutStore } from "../../../mod/identity/lockout.ts";
import { createLoginThrottle, LOGIN_LIMITS } from "../../../mod/identity/login_throttle.ts";

const NOW = Date.UTC(2026, 5, 1);
const options = { threshold: 3, baseLockMs: 30_000, maxLockMs: 120_000, windowMs: 600_000 };

/** The store's lockout rows, and how many reads went to the store. */
function counted(db: SqliteDb): LockoutStore & { reads: number } {
  const repo = createLockoutRepo(db);
  const store = {
    reads: 0,
    get(key: string) {
      store.reads++;
      return repo.get(key);
    },
    put: repo.put,
    delete: repo.delete,
    purge: repo.purge,
    atomically: repo.atomically,
  };
  return store;
}

const rows = (db: SqliteDb) =>
  db.prepare("SELECT key, value FROM settings WHERE key LIKE 'lockout.%' ORDER BY key").all() as {
    key: string;
    value: string;
  }[];

Deno.test("two controllers on one store lock a (username, client) pair after five failures between them", async () => {
  await using store = await testStore(NOW);
  const other = store.reopen();
  try {
    const clock = new FakeClock(NOW);
    const a = createLoginThrottle(clock, LOGIN_LIMITS, createLockoutRepo(store.db));
    const b = createLoginThrottle(clock, LOGIN_LIMITS, createLockoutRepo(other));
    const locked: boolean[] = [];
    // A load balancer alternating: a, b, a, b, a.
    for (let i = 0; i < 5; i++) locked.push((i % 2 === 0 ? a : b).fail("admin", "203.0.113.7"));
    assertEquals(locked, [false, false, false, false, true], "the lock is told once");
    ok(a.retryAfter("admin", "203.0.113.7") > 0);
    assertEquals(b.retryAfter("admin", "203.0.113.7"), 30);
    // Another address is not locked out of the account on either.
    assertEquals(a.retryAfter("admin", "198.51.100.2"), 0);
    assertEquals(b.retryAfter("admin", "198.51.100.2"), 0);
    assertEquals(b.pressure("203.0.113.7", "admin").pairFailures, 5);
    // Keys are hashed: no username or address in the rows.
    const stored = rows(store.db);
    assertEquals(stored.length, 3, JSON.stringify(stored));
    for (const r of stored) {
      ok(/^lockout\.login\.(pair|username|client)\.[0-9a-f]{64}$/.test(r.key), r.key);
      ok(!r.key.includes("admin") && !r.value.includes("203.0.113.7"), r.key);
    }
  } finally {
    other.close();
  }
});

Deno.test("the spraying ceiling of a client counts its failures on every controller", async () => {
  await using store = await testStore(NOW);
  const other = store.reopen();
  try {
    const clock = new FakeClock(NOW);
    const a = createLoginThrottle(clock, LOGIN_LIMITS, createLockoutRepo(store.db));
    const b = createLoginThrottle(clock, LOGIN_LIMITS, createLockoutRepo(other));
    const ceiling = LOGIN_LIMITS.clientCeiling;
    for (let i = 0; i < ceiling - 1; i++) (i % 2 ? a : b).fail(`user${i}`, "203.0.113.9");
    assertEquals(a.pressure("203.0.113.9").ceilingReached, false);
    b.fail("someone", "203.0.113.9");
    assertEquals(a.pressure("203.0.113.9").ceilingReached, true);
    assertEquals(b.pressure("203.0.113.9", "x").ceilingReached, true);
  } finally {
    other.close();
  }
});

Deno.test("a lock this controller saw is refused from memory; one made elsewhere is read from the store", async () => {
  await using store = await testStore(NOW);
  const other = store.reopen();
  try {
    const clock = new FakeClock(NOW);
    const sa = counted(store.db);
    const a = createLockout(clock, options, { store: sa, scope: "t" });
    const b = createLockout(clock, options, { store: createLockoutRepo(other), scope: "t" });
    for (let i = 0; i < 3; i++) a.fail(["k"]);
    const before = sa.reads;
    assertEquals(a.retryAfter(["k"]), 30);
    assertEquals(sa.reads, before, "no store read for a lock already known");
    // B's two failures (A saw none of them) are read by A, whose count was below the lock.
    b.fail(["j"]);
    b.fail(["j"]);
    assertEquals(a.retryAfter(["j"]), 0);
    b.fail(["j"]);
    assertEquals(a.retryAfter(["j"]), 30);
    // B's further failure lengthens the lock A learned; A asks again once its own view ends.
    b.fail(["k"]);
    clock.advance(30_000);
    assertEquals(a.retryAfter(["k"]), 30);
  } finally {
    other.close();
  }
});

Deno.test("a reset forgets the key on every controller, and the sweep deletes expired rows", async () => {
  await using store = await testStore(NOW);
  const other = store.reopen();
  try {
    const clock = new FakeClock(NOW);
    const a = createLockout(clock, options, { store: createLockoutRepo(store.db), scope: "t" });
    const b = createLockout(clock, options, { store: createLockoutRepo(other), scope: "t" });
    a.fail(["k"]);
    a.fail(["gone"]);
    assertEquals(b.failures("k"), 1);
    b.reset("k");
    assertEquals(a.failures("k"), 0);
    // Another scope's row is not this sweep's to delete.
    const u = createLockout(clock, { ...options, windowMs: 3_600_000 }, {
      store: createLockoutRepo(store.db),
      scope: "u",
    });
    u.fail(["k"]);
    clock.advance(options.windowMs + 1);
    assertEquals(rows(store.db).length, 2);
    b.sweep();
    assertEquals(rows(store.db).map((r) => r.key.split(".")[1]), ["u"]);
    assertEquals(u.failures("k"), 1);
  } finally {
    other.close();
  }
});

Deno.test("a shared lockout doubles its lock up to the maximum as the memory one does", async () => {
  await using store = await testStore(NOW);
  const clock = new FakeClock(NOW);
  const shared = createLockout(clock, options, { store: createLockoutRepo(store.db), scope: "t" });
  const memory = createLockout(clock, options);
  const waits: number[][] = [[], []];
  for (let i = 0; i < 6; i++) {
    [shared, memory].forEach((l, n) => {
      l.fail(["k"]);
      waits[n]!.push(l.retryAfter(["k"]));
    });
  }
  assertEquals(waits[0], [0, 0, 30, 60, 120, 120]);
  assertEquals(waits[0], waits[1]);
  clock.advance(120_000);
  assertEquals([shared.retryAfter(["k"]), shared.failures("k")], [0, 6]);
  clock.advance(options.windowMs);
  assertEquals(shared.failures("k"), 0);
});
