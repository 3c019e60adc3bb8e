/**
 * The IP list's fold thread (`mod/protection/ip_list_fold_thread.ts`) when things go wrong or
 * grow: a fold the thread never answers is given up (logged, the list right meanwhile, the next
 * change folds again on a new thread), and a list that grows past the thread's limit by changes
 * starts the thread after the change that asked for the fold, not inside it (a worker's start
 * blocks the thread that starts it).
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import type { IpListItem } from "../../../engine/ip_list.ts";
import { ipListUpdater } from "../../../mod/protection/ip_list_updater.ts";
import {
  FOLD_HERE_BELOW,
  type FoldDeadline,
  IpListFoldThread,
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
async function foldAgain(
  thread: IpListFoldThread,
  store: Map<string, IpListItem>,
  updater: Updater,
  n: number,
) {
  add(store, updater, n);
  ok(updater.folding, "the next change folds again");
  await thread.settled();
  const list = add(store, updater, n + 1);
  assertEquals(list.size, store.size);
  assertEquals(list.match(ip(n + 1), "a", "/", 0)?.id, `e${n + 1}`);
  return list;
}

/**
 * Answer deadlines the test fires by hand (`fire`), never on their own: a fold's time counts its
 * thread's start, which under `deno test` type-checks the worker's module and on a loaded machine
 * took past the default timeout.
 */
function heldDeadlines() {
  const pending = new Set<() => void>();
  const deadline: FoldDeadline = (fire) => {
    pending.add(fire);
    return () => pending.delete(fire);
  };
  return {
    deadline,
    get pending() {
      return pending.size;
    },
    fire() {
      const now = [...pending];
      pending.clear();
      for (const f of now) f();
    },
  };
}

/** A thread that reads every fold and answers none (a fold that never ends, as a bug would make). */
const stuckWorker = () =>
  new Worker("data:text/javascript,self.onmessage = () => {};", { type: "module" });

Deno.test("IpListFoldThread.server: a list grown past the thread's limit by changes starts the thread after the change, not in it", async () => {
  const thread = new IpListFoldThread({ deadline: heldDeadlines().deadline });
  try {
    await grownPastTheLimit(thread);
  } finally {
    await thread.stop();
  }
});

async function grownPastTheLimit(thread: IpListFoldThread) {
  let n = FOLD_HERE_BELOW - 100;
  const store = new Map<string, IpListItem>();
  for (let i = 0; i < n; i++) store.set(`e${i}`, entry(i));
  const updater = ipListUpdater([...store.values()], thread.server);
  assertEquals(thread.running, false, "a full build below the limit starts no thread");
  // Added entries until a fold is under way: the first folds here (its base below the limit),
  // then the base is past it and the next one goes to the thread.
  let startedInChange = false;
  while (!updater.folding) {
    const id = `e${n}`;
    store.set(id, entry(n++));
    updater.apply([id], (x) => store.get(x));
    startedInChange ||= thread.running;
  }
  ok(updater.list.size > FOLD_HERE_BELOW, "the list grew past the limit");
  assertEquals(startedInChange, false, "no change started the thread");
  await thread.settled();
  ok(thread.running, "the thread started after the change, and folded");
  const before = updater.list.state.base;
  const id = `e${n}`;
  store.set(id, entry(n++));
  const list = updater.apply([id], (x) => store.get(x));
  ok(list.state.base !== before, "its fold is swapped in");
  assertEquals(list.size, store.size);
  assertEquals(list.match(ip(n - 1), "a", "/", 0)?.id, id);
}

Deno.test("IpListFoldThread.offThread: a fold the thread does not answer in time is given up, logged to its thread's log, and folded again at a later change", async () => {
  const logged: Array<[string, Record<string, unknown>]> = [];
  const deadlines = heldDeadlines();
  const thread = new IpListFoldThread({
    log: (message, fields) => void logged.push([message, fields]),
    timeoutMs: 1,
    deadline: deadlines.deadline,
  });
  // Another thread made after it (a second server in the process) logs its own folds only.
  const other: string[] = [];
  const second = new IpListFoldThread({ log: (message) => void other.push(message) });
  try {
    const store = new Map<string, IpListItem>();
    for (let i = 0; i < 60_000; i++) store.set(`e${i}`, entry(i));
    const updater = ipListUpdater([...store.values()], thread.offThread);
    const n = addUntilFolding(store, updater, store.size);
    // Its deadline passes before the thread can answer (no answer is read in this turn).
    assertEquals(deadlines.pending, 1, "the fold waits for its answer");
    deadlines.fire();
    await thread.settled();
    assertEquals(updater.folding, false, "the fold given up");
    assertEquals(thread.running, false, "the stuck thread ended");
    assertEquals(logged.length, 1);
    assertEquals(logged[0]![0], "IP-list fold thread did not answer in time; restarting it");
    assertEquals(logged[0]![1]["timeout_ms"], 1);
    // The pending changes keep serving.
    const base = updater.list.state.base;
    assertEquals(updater.list.match(ip(n - 1), "a", "/", 0)?.id, `e${n - 1}`);
    // The next change folds again, on a new thread (its deadline left alone), and a later one
    // swaps it in.
    const list = await foldAgain(thread, store, updater, n);
    ok(list.state.base !== base, "the new base is in force");
    assertEquals(logged.length, 1);
    assertEquals(other, [], "the other thread's log heard nothing");
  } finally {
    await thread.stop();
    await second.stop();
  }
});

Deno.test("IpListFoldThread.stop(): a fold the thread is stuck in does not hold the stop up; the list stays right and folds again later", async () => {
  // The first thread never answers; the one started after the stop is the fold worker.
  let starts = 0;
  const thread = new IpListFoldThread({
    spawn: () =>
      starts++ === 0
        ? stuckWorker()
        : new Worker(new URL("../../../mod/protection/ip_list_fold_worker.ts", import.meta.url), {
          type: "module",
        }),
  });
  const store = new Map<string, IpListItem>();
  for (let i = 0; i < 20_000; i++) store.set(`e${i}`, entry(i));
  const updater = ipListUpdater([...store.values()], thread.offThread);
  ok(thread.running, "the full build started the thread");
  // The fold asked next is never answered (its timeout is 30 s).
  const n = addUntilFolding(store, updater, store.size);
  let bound: ReturnType<typeof setTimeout> | undefined;
  const stopped = await Promise.race([
    thread.stop().then(() => "stopped"),
    new Promise((r) => bound = setTimeout(() => r("still waiting after 5 s"), 5_000)),
  ]);
  clearTimeout(bound);
  assertEquals(stopped, "stopped");
  assertEquals(thread.running, false);
  assertEquals(updater.folding, false, "the fold under way failed");
  assertEquals(updater.list.match(ip(n - 1), "a", "/", 0)?.id, `e${n - 1}`);
  // A later change folds again, on a new thread.
  await foldAgain(thread, store, updater, n);
  await thread.stop();
});
