/**
 * The IP list kept current by changes (`mod/protection/ip_list_updater.ts`, over the engine's
 * fold `engine/ip_list_fold.ts`) answers every lookup as a list compiled in full: over random
 * changes, with folds under way or failed, on the fold thread, and without keeping old bases.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { type Seeded, seeded } from "../../_helpers/seeded.ts";
import {
  type Cidr,
  formatCidr,
  type IpAddress,
  maskWords,
  parseCidr,
} from "../../../engine/ip_address.ts";
import { buildIpList, type IpList, type IpListItem, ipListOf } from "../../../engine/ip_list.ts";
import { foldHere, type IpListFold, pendingLimit } from "../../../engine/ip_list_fold.ts";
import { type IpListFolder, ipListUpdater } from "../../../mod/protection/ip_list_updater.ts";
import { IpListFoldThread } from "../../../mod/protection/ip_list_fold_thread.ts";

/**
 * Addresses from a few small neighbourhoods of both families, so networks nest and collide
 * (duplicates, a /32 inside a /24 inside a /8) instead of never meeting.
 */
function address(r: Seeded): IpAddress {
  if (r.next() < 0.5) {
    const net = r.pick([0x0a000000, 0x0a010000, 0xc0000200, 0xcb007100]);
    return { version: 4, words: [(net | r.int(512)) >>> 0] };
  }
  const hi = r.pick([0x20010db8, 0x20010db9, 0xfe800000]);
  return { version: 6, words: [hi, r.int(3), r.pick([0, 0x8000_0000]) >>> 0, r.int(300)] };
}

function network(r: Seeded): Cidr {
  const ip = address(r);
  const prefix = ip.version === 4
    ? r.pick([0, 8, 16, 23, 24, 30, 32, 32, 32])
    : r.pick([0, 32, 48, 64, 65, 96, 127, 128, 128]);
  return { version: ip.version, words: maskWords(ip.words, prefix), prefix };
}

function item(r: Seeded, id: string, order?: { position: number; createdAt: number }): IpListItem {
  const cidr = network(r);
  return [cidr, {
    id,
    action: r.next() < 0.3 ? "allow" : "block",
    cidr: formatCidr(cidr),
    siteId: r.pick([null, null, "a", "b"]),
    pathPrefix: r.pick([null, null, "/admin"]),
    expiresAt: r.pick([null, null, 1000, 5000]),
  }, order ?? { position: r.int(20), createdAt: r.int(3) }];
}

/** `ORDER BY position, created_at, id`, as the store lists the rows. */
function stored(items: Iterable<IpListItem>): IpListItem[] {
  return [...items].sort((a, b) =>
    a[2]!.position - b[2]!.position || a[2]!.createdAt - b[2]!.createdAt ||
    (a[1].id < b[1].id ? -1 : a[1].id > b[1].id ? 1 : 0)
  );
}

/** Every probe answers the same on `got` as on `want` (a list compiled in full). */
function sameAnswers(r: Seeded, got: IpList, want: IpList, probes: number, label: string): void {
  assertEquals(got.size, want.size, `${label}: size`);
  for (let p = 0; p < probes; p++) {
    const ip = address(r);
    const site = r.pick(["a", "b", "c"]);
    const path = r.pick(["/", "/admin/x", "/adminx"]);
    const now = r.pick([0, 999, 1000, 4999, 6000]);
    assertEquals(
      got.match(ip, site, path, now),
      want.match(ip, site, path, now),
      `${label}: ${JSON.stringify(ip)} ${site} ${path} ${now}`,
    );
  }
}

/**
 * 300 random entries by id, and `batch()`: adds, removals and replacements (same place in the
 * order, new content) made to them, as a burst of coalesced writes gives them (some ids change
 * twice, some not at all; now and then an id never stored); it returns the ids it changed.
 */
function randomStore(r: Seeded) {
  const store = new Map<string, IpListItem>();
  let nextId = 0;
  const newId = () => `ip_${(nextId++).toString(36)}`;
  for (let i = 0; i < 300; i++) {
    const id = newId();
    store.set(id, item(r, id));
  }
  const batch = (): string[] => {
    const changed: string[] = [];
    const count = r.pick([1, 1, 2, 5, 20, 90]);
    for (let c = 0; c < count; c++) {
      const ids = [...store.keys()];
      const roll = r.next();
      if (roll < 0.45 || ids.length === 0) {
        const id = newId();
        store.set(id, item(r, id));
        changed.push(id);
      } else if (roll < 0.8) {
        const id = r.pick(ids);
        store.delete(id);
        changed.push(id);
      } else {
        const id = r.pick(ids);
        store.set(id, item(r, id, store.get(id)![2]));
        changed.push(id);
      }
    }
    if (r.next() < 0.1) changed.push("ip_never_stored");
    return changed;
  };
  return { store, batch };
}

for (const seed of [1, 2, 3, 4, 5, 6]) {
  Deno.test(`ipListUpdater(): random changes answer as a full build does (seed ${seed})`, () => {
    const r = seeded(seed);
    const { store, batch } = randomStore(r);
    const updater = ipListUpdater(stored(store.values()));
    let folded = 0;
    for (let round = 0; round < 60; round++) {
      const changed = batch();
      const before = updater.list.state.base;
      const list = updater.apply(changed, (id) => store.get(id));
      if (list.state.base !== before) folded++;
      const full = buildIpList(stored(store.values()));
      sameAnswers(r, list, full, 150, `seed ${seed} round ${round}`);
      // What a worker holds: the state copied, wrapped.
      sameAnswers(r, ipListOf(structuredClone(list.state)), full, 30, `copied, round ${round}`);
    }
    assertEquals(folded > 0, true, "the changes were folded into a new base at least once");
  });
}

/**
 * A fold that finishes when the test says (`finish`), or fails (`fail`): what a fold on another
 * thread looks like to the list, with the test choosing which changes come while it runs.
 */
function heldFolds() {
  let pending: { run: () => IpListFold; resolve: (f: IpListFold) => void; reject: () => void }[] =
    [];
  const fold: IpListFolder = (base, dropped, added) =>
    new Promise<IpListFold>((resolve, reject) => {
      pending.push({ run: () => foldHere(base, dropped, added), resolve, reject: () => reject() });
    });
  const settle = async (ok: boolean) => {
    const now = pending;
    pending = [];
    for (const p of now) ok ? p.resolve(p.run()) : p.reject();
    await Promise.resolve();
    await Promise.resolve();
  };
  return {
    fold,
    get running() {
      return pending.length > 0;
    },
    finish: () => settle(true),
    fail: () => settle(false),
  };
}

for (const seed of [1, 2, 3, 4]) {
  Deno.test(`ipListUpdater(): with a fold under way, every lookup answers as a full build does (seed ${seed})`, async () => {
    const r = seeded(100 + seed);
    const { store, batch } = randomStore(r);
    const folds = heldFolds();
    const updater = ipListUpdater(stored(store.values()), folds.fold);
    let during = 0;
    let swapped = 0;
    let failed = 0;
    let ended = 0;
    let age = 0;
    for (let round = 0; round < 80; round++) {
      // A fold runs on while three rounds of changes come, then finishes (every third fails).
      if (folds.running && ++age >= 3) {
        age = 0;
        if (++ended % 3 === 0) (await folds.fail(), failed++);
        else await folds.finish();
      }
      if (updater.folding) during++;
      const changed = batch();
      const before = updater.list.state.base;
      const list = updater.apply(changed, (id) => store.get(id));
      if (list.state.base !== before) swapped++;
      const full = buildIpList(stored(store.values()));
      sameAnswers(r, list, full, 150, `seed ${seed} round ${round}`);
      sameAnswers(r, ipListOf(structuredClone(list.state)), full, 30, `copied, round ${round}`);
    }
    ok(during >= 5, `changes came while a fold was under way (${during} rounds)`);
    ok(swapped > 1, `folded bases were swapped in (${swapped})`);
    ok(failed > 0, "a failed fold left the list right");
  });
}

Deno.test("IpListFoldThread.offThread: the thread's fold is the fold here, byte for byte, and the updater swaps it in", async () => {
  const thread = new IpListFoldThread();
  const foldOffThread = thread.offThread;
  const r = seeded(41);
  const items = stored(Array.from({ length: 2000 }, (_, i) => item(r, `e${i}`)));
  const dropped = Uint32Array.from([0, 5, 17, 1999]);
  const added = stored(Array.from({ length: 40 }, (_, i) => item(r, `n${i}`)));
  const base = ipListUpdater(items).list.state.base;
  const more = ipListUpdater(added).list.state.base;
  const there = await foldOffThread(base, dropped, more);
  assertEquals(there, foldHere(base, dropped, more));
  // Through the updater: the change that passes the limit starts it, a later one swaps it in.
  const store = new Map(items.map((x) => [x[1].id, x] as const));
  const updater = ipListUpdater(items, foldOffThread);
  let k = 0;
  while (!updater.folding) {
    const id = `m${k++}`;
    store.set(id, item(r, id));
    updater.apply([id], (x) => store.get(x));
  }
  const before = updater.list.state.base;
  await thread.settled();
  store.delete("e3");
  const list = updater.apply(["e3"], (x) => store.get(x));
  ok(list.state.base !== before, "the new base is in force");
  assertEquals(updater.folding, false);
  sameAnswers(r, list, buildIpList(stored(store.values())), 300, "after the swap");
  await thread.stop();
});

Deno.test("ipListUpdater(): folds keep no earlier base alive (memory stays one base and a patch)", async () => {
  // In a process of its own with the collector exposed: a base no longer in force must be
  // collectable after its fold is swapped in, whether the fold ran here or is awaited.
  const script = `
    import { ipListUpdater } from ${
    JSON.stringify(import.meta.resolve("../../../mod/protection/ip_list_updater.ts"))
  };
    import { IpListFoldThread } from ${
    JSON.stringify(import.meta.resolve("../../../mod/protection/ip_list_fold_thread.ts"))
  };
    import { parseCidr } from ${
    JSON.stringify(import.meta.resolve("../../../engine/ip_address.ts"))
  };
    const item = (i) => {
      const cidr = "10." + ((i >> 16) & 255) + "." + ((i >> 8) & 255) + "." + (i & 255) + "/32";
      return [parseCidr(cidr), { id: "e" + i, action: "block", cidr, siteId: null,
        pathPrefix: null, expiresAt: null }, { position: i, createdAt: 0 }];
    };
    const out = {};
    const thread = new IpListFoldThread();
    for (const where of ["here", "thread"]) {
      const updater = ipListUpdater(Array.from({ length: 3000 }, (_, i) => item(i)),
        where === "here" ? undefined : thread.offThread);
      const firsts = [];
      let next = 3000;
      // A function: the loop's own scope would hold its last base.
      const step = () => {
        const base = updater.list.state.base;
        const it = item(next);
        updater.apply(["e" + next++], () => it);
        if (updater.list.state.base !== base) firsts.push(new WeakRef(base));
      };
      while (firsts.length < 4) {
        step();
        await thread.settled();
      }
      for (let k = 0; k < 3; k++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 0)); }
      out[where] = firsts.filter((w) => w.deref() !== undefined).length;
    }
    await thread.stop();
    console.log(JSON.stringify(out));
  `;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(code, 0, new TextDecoder().decode(stderr));
  assertEquals(JSON.parse(new TextDecoder().decode(stdout)), { here: 0, thread: 0 });
});

Deno.test("ipListUpdater(): an unchanged list is the same object, a change keeps the base", () => {
  const r = seeded(9);
  const items = stored(Array.from({ length: 50 }, (_, i) => item(r, `e${i}`)));
  const updater = ipListUpdater(items);
  const first = updater.list;
  assertEquals(updater.apply([], () => undefined), first);
  const changed = updater.apply(["e3"], () => undefined);
  assertEquals(changed.state.base, first.state.base);
  assertEquals([...changed.state.dropped!], [items.findIndex(([, e]) => e.id === "e3")]);
  assertEquals(changed.size, 49);
});

Deno.test("ipListUpdater(): a removed entry stops matching, an added one decides by precedence", () => {
  const at = (text: string) => parseCidr(text)!;
  const entry = (id: string, cidr: string, action: "allow" | "block", position: number) =>
    [at(cidr), {
      id,
      action,
      cidr,
      siteId: null,
      pathPrefix: null,
      expiresAt: null,
    }, { position, createdAt: 0 }] as const;
  const wide = entry("wide", "10.0.0.0/8", "block", 1);
  const host = entry("host", "10.1.2.3/32", "block", 2);
  const updater = ipListUpdater([wide, host]);
  const ip = { version: 4, words: [0x0a010203] } as const;
  assertEquals(updater.list.match(ip, "s", "/", 0)?.id, "host", "most specific first");
  // An earlier-positioned block on the same network, added later, decides before "host".
  const early = entry("early", "10.1.2.3/32", "block", 0);
  assertEquals(updater.apply(["early"], () => early).match(ip, "s", "/", 0)?.id, "early");
  // An allow anywhere wins over every block.
  const allow = entry("allow", "0.0.0.0/0", "allow", 9);
  assertEquals(updater.apply(["allow"], () => allow).match(ip, "s", "/", 0)?.id, "allow");
  const gone = updater.apply(["allow", "early", "host"], () => undefined);
  assertEquals(gone.match(ip, "s", "/", 0)?.id, "wide");
  assertEquals(gone.size, 1);
});

Deno.test("pendingLimit() grows with the square root of the list, from a floor", () => {
  assertEquals(pendingLimit(0), 256);
  assertEquals(pendingLimit(100_000), 317);
  assertEquals(pendingLimit(1_000_000), 1000);
});

Deno.test("ipListOf(): an added entry of every prefix length, both families, is found behind the filter", () => {
  const r = seeded(33);
  const random = () => (r.int(0x10000) * 0x10000 + r.int(0x10000)) >>> 0;
  // A base of unrelated entries, so the lookup takes the path with changes pending.
  // (Of another site: the added entry alone decides.)
  const base = stored(Array.from({ length: 50 }, (_, i) => item(r, `b${i}`)))
    .map(([c, e, o]): IpListItem => [c, { ...e, siteId: "elsewhere" }, o]);
  for (const version of [4, 6] as const) {
    for (let prefix = 0; prefix <= (version === 4 ? 32 : 128); prefix++) {
      const words = version === 4 ? [random()] : [random(), random(), random(), random()];
      const cidr: Cidr = { version, words: maskWords(words, prefix), prefix };
      const id = `added-${version}-${prefix}`;
      const added: IpListItem = [cidr, {
        id,
        action: "allow",
        cidr: formatCidr(cidr),
        siteId: null,
        pathPrefix: null,
        expiresAt: null,
      }, { position: 99, createdAt: 0 }];
      const list = ipListUpdater(base).apply([id], () => added);
      ok(list.state.added !== undefined, "pending, not folded");
      for (let p = 0; p < 20; p++) {
        // Any address inside the network: the network's bits, random host bits.
        const host = version === 4 ? [random()] : [random(), random(), random(), random()];
        const inside = host.map((h, w) => {
          const keep = Math.min(32, Math.max(0, prefix - w * 32));
          const mask = keep === 0 ? 0 : (0xffffffff << (32 - keep)) >>> 0;
          return ((cidr.words[w]! & mask) | (h & ~mask)) >>> 0;
        });
        const ip: IpAddress = { version, words: inside };
        assertEquals(list.match(ip, "a", "/", 0)?.id, id, `${formatCidr(cidr)} ${inside}`);
      }
    }
  }
});
