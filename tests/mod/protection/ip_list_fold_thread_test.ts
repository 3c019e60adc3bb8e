/**
 * The IP list's fold thread (`mod/protection/ip_list_fold_thread.ts`) when things go wrong or grow: a fold the
 * thread never answers is given up (logged, the list right meanwhile, the next change folds again
 * on a new thread), and a list that grows past the thread's limit by changes starts the thread
 * after the change that asked for the fold, not inside it (a worker's start blocks 10-210 ms).
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import type { IpListItem } from "../../../engine/ip_list.ts";
import { ipListUpdater } from "../../../mod/protection/ip_list_updater.ts";
import {
  createOffThreadFold,
  FOLD_HERE_BELOW,
  foldOffThread,
  foldsSettled,
  foldThreadRunning,
  serverFold,
  setFoldTimeout,
  stallFoldThread,
  stopFolds,
} from "../../../mod/protection/ip_list_fold_thread.ts";

/** A /32 block entry for 10.x.y.z numbered `n` (distinct for n below 2^24). */
function entry(n: number, id = `e${n}`): IpListItem {
  return [{ version: 4, words: [(0x0a000000 | n) >>> 0], prefix: 32 }, {
    id,
    action: "block",
    cidr: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}/32`,
    siteId: null,
    pathPrefix: null,
    expiresAt: null,
  }, { position: 0, createdAt: n }];
}

const ip = (n: number) => ({ version: 4 as const, words: [(0x0a000000 | n) >>> 0] });

type Updater = ReturnType<typeof ipListUpdater>;

/** Adds entry `n` to `store` and applies it: the list after the change. */
function add(store: Map<string, IpListItem>, updater: Updater, n: number) {
  const id = `e${n}`;
  store.set(id, entry(n));
  return updater.apply([id], (x) => store.get(x));
}

/** Adds entries numbered from `n` until a fold is under way; returns the next number. */
function addUntilFolding(store: Map<string, IpListItem>, updater: Updater, n: number): number {
  while (!updater.folding) add(store, updater, n++);
  return n;
}

/**
 * After a fold failed: the next change (entry `n`) folds again, on a new thread, and the one
 * after it swaps the new base in. Returns the list then.
 */
async function foldAgain(store: Map<string, IpListItem>, updater: Updater, n: number) {
  add(store, updater, n);
  ok(updater.folding, "the next change folds again");
  await foldsSettled();
  const list = add(store, updater, n + 1);
  assertEquals(list.size, store.size);
  assertEquals(list.match(ip(n + 1), "a", "/", 0)?.id, `e${n + 1}`);
  return list;
}

/**
 * A fold timeout no test reaches: a fold's time counts its thread's start, which under
 * `deno test` type-checks the worker's module, and at load 20 that took 39-58 s, past the
 * default 30 s (the thread was ended as stuck and the fold given up).
 */
const NEVER_MS = 600_000;

Deno.test("serverFold(): a list grown past the thread's limit by changes starts the thread after the change, not in it", async () => {
  await stopFolds();
  const timeout = setFoldTimeout(NEVER_MS);
  try {
    await grownPastTheLimit();
  } finally {
    setFoldTimeout(timeout);
  }
});

async function grownPastTheLimit() {
  let n = FOLD_HERE_BELOW - 100;
  const store = new Map<string, IpListItem>();
  for (let i = 0; i < n; i++) store.set(`e${i}`, entry(i));
  const updater = ipListUpdater([...store.values()], serverFold);
  assertEquals(foldThreadRunning(), false, "a full build below the limit starts no thread");
  // Added entries until a fold is under way: the first folds here (its base below the limit),
  // then the base is past it and the next one goes to the thread.
  let startedInChange = false;
  while (!updater.folding) {
    const id = `e${n}`;
    store.set(id, entry(n++));
    updater.apply([id], (x) => store.get(x));
    startedInChange ||= foldThreadRunning();
  }
  ok(updater.list.size > FOLD_HERE_BELOW, "the list grew past the limit");
  assertEquals(startedInChange, false, "no change started the thread");
  await foldsSettled();
  ok(foldThreadRunning(), "the thread started after the change, and folded");
  const before = updater.list.state.base;
  const id = `e${n}`;
  store.set(id, entry(n++));
  const list = updater.apply([id], (x) => store.get(x));
  ok(list.state.base !== before, "its fold is swapped in");
  assertEquals(list.size, store.size);
  assertEquals(list.match(ip(n - 1), "a", "/", 0)?.id, id);
  await stopFolds();
}

Deno.test("foldOffThread(): a fold the thread does not answer in time is given up, logged to its folder's log, and folded again at a later change", async () => {
  await stopFolds();
  const logged: Array<[string, Record<string, unknown>]> = [];
  const fold = createOffThreadFold((message, fields) => void logged.push([message, fields]));
  // Another folder made after it (a second server in the process) logs its own folds only.
  const other: string[] = [];
  createOffThreadFold((message) => void other.push(message));
  const before = setFoldTimeout(1);
  try {
    const store = new Map<string, IpListItem>();
    for (let i = 0; i < 60_000; i++) store.set(`e${i}`, entry(i));
    const updater = ipListUpdater([...store.values()], fold);
    const n = addUntilFolding(store, updater, store.size);
    // The fold of 60,000 entries takes far longer than 1 ms: given up.
    await foldsSettled();
    assertEquals(updater.folding, false, "the fold given up");
    assertEquals(foldThreadRunning(), false, "the stuck thread ended");
    assertEquals(logged.length, 1);
    assertEquals(logged[0]![0], "IP-list fold thread did not answer in time; restarting it");
    assertEquals(logged[0]![1]["timeout_ms"], 1);
    // The pending changes keep serving.
    const base = updater.list.state.base;
    assertEquals(updater.list.match(ip(n - 1), "a", "/", 0)?.id, `e${n - 1}`);
    setFoldTimeout(NEVER_MS);
    // The next change folds again, on a new thread, and a later one swaps it in.
    const list = await foldAgain(store, updater, n);
    ok(list.state.base !== base, "the new base is in force");
    assertEquals(logged.length, 1);
    assertEquals(other, [], "the other folder's log heard nothing");
  } finally {
    setFoldTimeout(before);
    await stopFolds();
  }
});

Deno.test("stopFolds(): a fold the thread is stuck in does not hold the stop up; the list stays right and folds again later", async () => {
  await stopFolds();
  const store = new Map<string, IpListItem>();
  for (let i = 0; i < 20_000; i++) store.set(`e${i}`, entry(i));
  const updater = ipListUpdater([...store.values()], foldOffThread);
  ok(foldThreadRunning(), "the full build started the thread");
  // The thread busy for 20 s: the fold asked next waits behind it (its timeout is 30 s).
  stallFoldThread(20_000);
  const n = addUntilFolding(store, updater, store.size);
  const stopped = await Promise.race([
    stopFolds().then(() => "stopped"),
    new Promise((r) => setTimeout(() => r("still waiting after 5 s"), 5_000)),
  ]);
  assertEquals(stopped, "stopped");
  assertEquals(foldThreadRunning(), false);
  assertEquals(updater.folding, false, "the fold under way failed");
  assertEquals(updater.list.match(ip(n - 1), "a", "/", 0)?.id, `e${n - 1}`);
  // A later change folds again, on a new thread.
  await foldAgain(store, updater, n);
  await stopFolds();
});
