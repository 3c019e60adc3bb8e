/**
 * The IP list the main thread keeps current from the store's change log answers exactly as a
 * list compiled from every stored row: over random writes of every kind the product makes
 * (entries added, replaced, moved, removed; a site deleted with its entries; a rolled-back write;
 * a bulk change past the log's limit), after a restart, and as a data-plane worker holds it.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { type Seeded, seeded } from "../_helpers/seeded.ts";
import { testStore } from "../_helpers/store.ts";
import { testConfig } from "../_helpers/server.ts";
import { openProtectionStore } from "../../app/protection.ts";
import { createPolicyObjectsRepo } from "../../db/policy_objects_repo.ts";
import { createSitesRepo } from "../../db/sites_repo.ts";
import { type Db, transaction } from "../../db/store.ts";
import { formatCidr, type IpAddress, maskWords, parseIp } from "../../engine/ip_address.ts";
import { type IpList, ipListOf } from "../../engine/ip_list.ts";
import { IpListFoldThread } from "../../mod/protection/ip_list_fold_thread.ts";
import type { IpListFolder } from "../../mod/protection/ip_list_updater.ts";
import {
  createProtectionCompiler,
  KIND,
  type ProtectionSource,
} from "../../mod/protection/protection_compile.ts";
import {
  applyDelta,
  createSnapshotTap,
  deltaOf,
  type PolicySnapshot,
} from "../../mod/data_plane/policy_snapshot.ts";

function address(r: Seeded): IpAddress {
  if (r.next() < 0.5) {
    return { version: 4, words: [(r.pick([0x0a000000, 0xc0000200]) | r.int(256)) >>> 0] };
  }
  return { version: 6, words: [0x20010db8, r.int(2), 0, r.int(200)] };
}

/** An entry document as the API stores it (the network in canonical text, or as written). */
function doc(r: Seeded) {
  const ip = address(r);
  const prefix = ip.version === 4 ? r.pick([8, 24, 30, 32, 32]) : r.pick([32, 64, 120, 128]);
  const cidr = formatCidr({ ...ip, words: maskWords(ip.words, prefix), prefix });
  return {
    action: r.next() < 0.3 ? "allow" : "block",
    cidr: r.next() < 0.05 ? "not an address" : cidr,
    site_id: r.pick([null, null, "site-a", "site-b"]),
    path_prefix: r.pick([null, null, "/admin"]),
    expires_at: r.pick([null, null, "2026-01-01T00:00:01.000Z"]),
    note: "",
  };
}

const NOW_CHOICES = [Date.UTC(2026, 0, 1), Date.UTC(2027, 0, 1)];

function sameAnswers(r: Seeded, got: IpList, want: IpList, label: string): void {
  assertEquals(got.size, want.size, `${label}: size`);
  for (let p = 0; p < 200; p++) {
    const ip = address(r);
    const site = r.pick(["site-a", "site-b", "site-c"]);
    const path = r.pick(["/", "/admin/x"]);
    const now = r.pick(NOW_CHOICES);
    assertEquals(
      got.match(ip, site, path, now),
      want.match(ip, site, path, now),
      `${label}: ${JSON.stringify(ip)} ${site} ${path} ${now}`,
    );
  }
}

/**
 * A store with sites "site-a" and "site-b", its protection store (change feed and all), what a
 * full build from every stored row gives (a compiler with no change feed), a random insert and
 * random writes.
 */
function ipFixture(db: Db, seed: number, tap?: (source: ProtectionSource) => ProtectionSource) {
  const config = testConfig();
  const folds = offThreadFolds();
  const sites = createSitesRepo(db);
  const addSite = (id: string) =>
    sites.insert({ id, name: id, config: "{}", created_at: 1, updated_at: 1 });
  addSite("site-a");
  addSite("site-b");
  const repo = createPolicyObjectsRepo(db);
  const store = openProtectionStore(db, config, tap, folds.fold);
  const full = () =>
    createProtectionCompiler()({
      rows: (kind) => repo.list(kind),
      singleton: () => undefined,
    }).ipList;
  const r = seeded(seed);
  let n = 0;
  const insert = (position = r.int(30), created = r.int(3)) => {
    const d = doc(r);
    repo.insert({
      id: `ip_${(n++).toString(36)}`,
      kind: KIND.ip,
      site_id: d.site_id,
      position,
      config: JSON.stringify(d),
      created_at: created,
      updated_at: created,
    });
  };
  /** `count` random writes: entries added, removed and replaced (PUT), some moved. */
  const writes = (count: number) => {
    const ids = repo.list(KIND.ip).map((x) => x.id);
    for (let k = 0; k < count; k++) {
      const roll = r.next();
      if (roll < 0.4 || ids.length === 0) insert();
      else if (roll < 0.7) repo.remove(KIND.ip, ids.splice(r.int(ids.length), 1)[0]!);
      else {
        const old = repo.get(KIND.ip, r.pick(ids))!;
        const d = doc(r);
        repo.update({
          ...old,
          site_id: d.site_id,
          position: r.next() < 0.3 ? r.int(30) : old.position,
          config: JSON.stringify(d),
          updated_at: old.updated_at + 1,
        });
      }
    }
  };
  return { config, addSite, repo, store, full, r, insert, writes, folds };
}

/**
 * The server's fold (a thread of its own), watched: whether one is under way, and how many
 * finished. A test lets a fold finish (`settle`) between some writes only, so other writes, builds,
 * rollbacks and restarts happen while it runs, and the next build swaps its base in.
 */
function offThreadFolds() {
  const thread = new IpListFoldThread();
  let running: Promise<unknown> | undefined;
  let finished = 0;
  const fold: IpListFolder = (base, dropped, added) => {
    const result = thread.offThread(base, dropped, added);
    if (result instanceof Promise) {
      const mine = result.then(() => {
        finished++;
        if (running === mine) running = undefined;
      });
      running = mine;
    }
    return result;
  };
  return {
    fold,
    get running() {
      return running !== undefined;
    },
    get finished() {
      return finished;
    },
    async settle() {
      while (running !== undefined) await running;
      await thread.settled();
    },
    stop: () => thread.stop(),
  };
}

Deno.test("the IP list kept current from the change log answers as a full compile, over random writes and a restart", async () => {
  await using s = await testStore();
  const { config, addSite, repo, store, full, r, insert, writes, folds } = ipFixture(s.db, 7);
  for (let i = 0; i < 400; i++) insert();
  let list = store.compile().ipList;
  sameAnswers(r, list, full(), "first build");
  let bases = 0;
  let duringFold = 0;
  for (let round = 0; round < 40; round++) {
    // A fold finishes every fifth round: builds before that run while it is under way.
    if (round % 5 === 0) await folds.settle();
    if (folds.running) duringFold++;
    writes(r.pick([1, 3, 10, 60]));
    if (round === 10) {
      // A site deleted: its entries go by the foreign key, not through the repository.
      s.db.exec("DELETE FROM sites WHERE id = 'site-b'");
      addSite("site-b");
    }
    if (round === 20) {
      try {
        transaction(s.db, () => {
          for (const x of repo.list(KIND.ip).slice(0, 50)) repo.remove(KIND.ip, x.id);
          throw new Error("rolled back");
        });
      } catch {
        // The write failed as intended: nothing changed.
      }
    }
    // A bulk change past the log's limit (a cluster node's policy replaced): read in full.
    if (round === 30) transaction(s.db, () => Array.from({ length: 1100 }, () => insert(5)));
    const before = list.state.base;
    list = store.compile().ipList;
    if (list.state.base !== before) bases++;
    sameAnswers(r, list, full(), `round ${round}`);
    sameAnswers(r, ipListOf(structuredClone(list.state)), full(), `copied, round ${round}`);
  }
  assertEquals(bases > 1, true, "folded or read in full at least once besides the first build");
  assertEquals(folds.finished > 0, true, "a fold finished and was swapped in");
  assertEquals(duringFold > 0, true, "builds ran while a fold was under way");
  await folds.stop();

  // A restart: another connection to the same file starts from the stored rows.
  const reopened = s.reopen();
  try {
    const again = openProtectionStore(reopened, config).compile().ipList;
    sameAnswers(r, again, list, "after a restart");
  } finally {
    reopened.close();
  }
});

Deno.test("a build that fails on a stored IP entry reads every row the next time", async () => {
  await using s = await testStore();
  const repo = createPolicyObjectsRepo(s.db);
  const store = openProtectionStore(s.db, testConfig());
  const put = (id: string, position: number, config: string) =>
    repo.insert({
      id,
      kind: KIND.ip,
      site_id: null,
      position,
      config,
      created_at: 1,
      updated_at: 1,
    });
  const entry = (cidr: string) =>
    JSON.stringify({
      action: "block",
      cidr,
      site_id: null,
      path_prefix: null,
      expires_at: null,
      note: "",
    });
  put("a", 1, entry("192.0.2.1"));
  assertEquals(store.compile().ipList.size, 1);
  // Written around the API (which validates): a change the build cannot parse, and a good one.
  put("b", 2, "{not json");
  put("c", 3, entry("192.0.2.3"));
  let failed = false;
  try {
    store.compile();
  } catch {
    failed = true;
  }
  assertEquals(failed, true);
  repo.update({ ...repo.get(KIND.ip, "b")!, config: entry("192.0.2.2") });
  const list = store.compile().ipList;
  assertEquals(list.size, 3, "the change taken by the failed build is not lost");
  for (const [ip, id] of [["192.0.2.1", "a"], ["192.0.2.2", "b"], ["192.0.2.3", "c"]]) {
    assertEquals(list.match(parseIp(ip!)!, "s", "/", 0)?.id, id);
  }
});

Deno.test("a build inside a write that rolls back (a controller's policy that does not compile) leaves the IP list as stored", async () => {
  await using s = await testStore();
  const { repo, store, full, r, insert } = ipFixture(s.db, 11);
  for (let i = 0; i < 400; i++) insert();
  sameAnswers(r, store.compile().ipList, full(), "first build");
  // As the cluster follower does: the rows replaced, the policy rebuilt inside the transaction,
  // and the transaction rolled back because the build (or its commit) failed. A few changes,
  // then a change past the log's limit (read in full).
  const writes: Array<readonly [string, () => void]> = [
    ["a few changes", () => {
      for (const x of repo.list(KIND.ip).slice(0, 40)) repo.remove(KIND.ip, x.id);
      for (let i = 0; i < 20; i++) insert();
    }],
    ["a change past the log's limit", () => {
      s.db.exec(`DELETE FROM policy_objects WHERE kind = '${KIND.ip}'`);
      for (let i = 0; i < 1100; i++) insert();
    }],
  ];
  for (const [label, write] of writes) {
    try {
      transaction(s.db, () => {
        write();
        store.compile();
        throw new Error("the policy does not compile");
      });
    } catch {
      // Rolled back as intended: the store holds what it held.
    }
    sameAnswers(r, store.compile().ipList, full(), `${label}: the next build`);
    // And after an unrelated committed change, as the next API write would rebuild.
    insert();
    sameAnswers(r, store.compile().ipList, full(), `${label}: after another write`);
  }
});

Deno.test("a worker fed each swap's delta holds the stored list through failed builds, rolled-back writes and restarts", async () => {
  await using s = await testStore();
  const tap = createSnapshotTap();
  const { store, full, r, insert, writes, folds } = ipFixture(s.db, 17, tap.source);
  for (let i = 0; i < 400; i++) insert();
  // The main thread's policy and what data_workers.ts does on each swap: the delta against the
  // snapshot sent last, copied to the worker, which applies it to what it holds.
  let version = 0;
  let enforced = store.compile().ipList;
  let sent: PolicySnapshot = tap.snapshot(++version, enforced.state);
  let worker: PolicySnapshot = structuredClone(sent);
  const sentAs = new Set<string>();
  const swap = () => {
    enforced = store.compile().ipList;
    const next = tap.snapshot(++version, enforced.state);
    const delta = deltaOf(sent, next);
    for (const k of delta.kept) sentAs.add(k);
    if (delta.ipList !== undefined) sentAs.add("whole");
    worker = applyDelta(worker, structuredClone(delta));
    sent = next;
  };
  const rolledBack = (fn: () => void) => {
    try {
      transaction(s.db, () => {
        fn();
        throw new Error("rolled back");
      });
    } catch {
      // As intended: the store holds what it held.
    }
  };
  const events: Record<string, number> = {};
  for (let round = 0; round < 80; round++) {
    if (folds.running && r.next() < 0.2) await folds.settle();
    const folding = folds.running;
    writes(r.pick([0, 1, 3, 10, 40]));
    const roll = r.next();
    const event = roll < 0.15
      ? "a build that fails after the IP list (no swap)"
      : roll < 0.3
      ? "a build inside a write that rolls back (no swap)"
      : roll < 0.45
      ? "a swap inside a write that rolls back (its commit failed)"
      : roll < 0.55
      ? "a swap inside a committed write (the cluster follower)"
      : roll < 0.65
      ? "a worker restarted from the current snapshot"
      : roll < 0.68
      ? "a bulk change past the log's limit"
      : "writes only";
    events[event] = (events[event] ?? 0) + 1;
    if (folding) events[`${event}, during a fold`] = (events[`${event}, during a fold`] ?? 0) + 1;
    if (roll < 0.15) store.compile();
    else if (roll < 0.3) rolledBack(() => (writes(r.pick([1, 10, 40])), store.compile()));
    else if (roll < 0.45) rolledBack(() => (writes(r.pick([1, 10, 40])), swap()));
    else if (roll < 0.55) transaction(s.db, () => (writes(r.pick([1, 10, 40])), swap()));
    else if (roll < 0.65) worker = structuredClone(tap.snapshot(version, enforced.state));
    else if (roll < 0.68) transaction(s.db, () => Array.from({ length: 1100 }, () => insert()));
    swap();
    const want = full();
    sameAnswers(r, enforced, want, `round ${round} (${event}): the main thread`);
    sameAnswers(r, ipListOf(worker.ipList!), want, `round ${round} (${event}): the worker`);
  }
  await folds.stop();
  for (
    const event of [
      "a build inside a write that rolls back (no swap)",
      "a swap inside a write that rolls back (its commit failed)",
      "a worker restarted from the current snapshot",
    ]
  ) assertEquals(events[`${event}, during a fold`]! > 0, true, `${event}, during a fold`);
  assertEquals(folds.finished > 1, true, "folds finished and were swapped in");
  // The list went as a patch, unchanged and whole (a fold's new base, or after a read in full).
  assertEquals(
    [...sentAs].filter((k) => k.startsWith(KIND.ip) || k === "whole").sort(),
    [KIND.ip, `${KIND.ip}:base`, "whole"].sort(),
  );
});
