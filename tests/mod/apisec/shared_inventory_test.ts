/**
 * Two controllers' inventories on one store (two connections; the same schema on PostgreSQL,
 * through tests/db/store_contract_test.ts): what each samples adds up in the stored rows whatever
 * the order of their flushes, either one answers with the deployment's inventory, a failed write
 * is retried without counting twice, and a template merged away on one controller brings the
 * other's stored counts into its new template.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { sample, T0 } from "../../_helpers/apisec_samples.ts";
import { testStore } from "../../_helpers/store.ts";
import {
  type ApiSecEndpointsRepo,
  createApiSecEndpointsRepo,
} from "../../../db/apisec_endpoints_repo.ts";
import type { Db } from "../../../db/store.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { VARIETY_LIMIT } from "../../../mod/apisec/endpoint_table.ts";
import { createInventory, type Inventory, READ_REFRESH_MS } from "../../../mod/apisec/inventory.ts";

function inventoryOn(repo: ApiSecEndpointsRepo, clock = new FakeClock(T0)): Inventory {
  return createInventory({ repo, clock, logger: createMemoryLogger() });
}

interface StoredEndpoint {
  template: string;
  hits: number;
  methods: Record<string, number>;
  statuses: Record<string, number>;
  first_seen: number;
  last_seen: number;
  example_path: string;
  query_params: string[];
}

/** The stored rows, by template. */
function stored(db: Db): Map<string, StoredEndpoint> {
  const rows = db.prepare("SELECT template, data FROM apisec_endpoints").all() as {
    template: string;
    data: string;
  }[];
  return new Map(rows.map((r) => [r.template, { template: r.template, ...JSON.parse(r.data) }]));
}

/**
 * Two connections to one fresh store (the second closed after `fn`) and an inventory on each,
 * on one clock, `a`'s repository through `wrapA` when given.
 */
async function withTwo(
  fn: (t: { db: Db; a: Inventory; b: Inventory; clock: FakeClock }) => void,
  wrapA: (repo: ApiSecEndpointsRepo) => ApiSecEndpointsRepo = (repo) => repo,
): Promise<void> {
  await using store = await testStore();
  const other = store.reopen();
  try {
    const clock = new FakeClock(T0);
    const a = inventoryOn(wrapA(createApiSecEndpointsRepo(store.db)), clock);
    const b = inventoryOn(createApiSecEndpointsRepo(other), clock);
    fn({ db: store.db, a, b, clock });
  } finally {
    other.close();
  }
}

Deno.test("two inventories on one store add up whatever the order of their flushes", () =>
  withTwo(({ db, a, b, clock }) => {
    a.sample(sample("/orders/1", { time: T0 + 10, queryNames: ["page"] }));
    a.sample(sample("/orders/2", { method: "POST", status: 201, time: T0 + 20 }));
    b.sample(sample("/orders/3", { time: T0 + 5, status: 404, queryNames: ["sort"] }));
    ok(a.flush());
    b.sample(sample("/orders/4", { time: T0 + 30 }));
    b.sample(sample("/health", { time: T0 + 1 }));
    ok(b.flush());
    a.sample(sample("/orders/5", { method: "POST", time: T0 + 15 }));
    ok(a.flush());
    ok(b.flush(), "nothing new: nothing written");
    const e = stored(db).get("/orders/{id}")!;
    assertEquals(e.hits, 5);
    assertEquals(e.methods, { GET: 3, POST: 2 });
    assertEquals(e.statuses, { "2xx": 4, "4xx": 1 });
    assertEquals([e.first_seen, e.last_seen, e.example_path], [T0 + 5, T0 + 30, "/orders/4"]);
    assertEquals(e.query_params.sort(), ["page", "sort"]);
    assertEquals(stored(db).get("/health")!.hits, 1);
    // Within the refresh age a read answers from the view: its own counts, all of them.
    assertEquals(a.endpoints().map((x) => [x.template, x.hits]), [["/orders/{id}", 3]]);
    // Past it either controller answers with the deployment's inventory, its own latest samples
    // included (b's read writes its sample first, a's then sees it).
    clock.advance(READ_REFRESH_MS);
    b.sample(sample("/orders/6", { time: T0 + 40 }));
    for (const inv of [b, a]) {
      const all = inv.endpoints();
      assertEquals(all.map((x) => [x.template, x.hits]).sort(), [["/health", 1], [
        "/orders/{id}",
        6,
      ]]);
      assertEquals(inv.stats().endpoints, 2);
    }
    assertEquals(stored(db).get("/orders/{id}")!.hits, 6, "a read wrote b's sample once");
    // Its own samples since count in the view at once; the store is read again past the age.
    a.sample(sample("/orders/8", { time: T0 + 45 }));
    b.sample(sample("/orders/9", { time: T0 + 46 }));
    assertEquals(a.endpoints().find((x) => x.template === "/orders/{id}")!.hits, 7);
    ok(b.flush());
    clock.advance(READ_REFRESH_MS);
    assertEquals(a.endpoints().find((x) => x.template === "/orders/{id}")!.hits, 8);
    assertEquals(stored(db).get("/orders/{id}")!.hits, 8);
    // A restart loads the deployment's counts, and adds only what it samples afterwards.
    const again = inventoryOn(createApiSecEndpointsRepo(db));
    again.sample(sample("/orders/7", { time: T0 + 50 }));
    ok(again.flush());
    assertEquals(stored(db).get("/orders/{id}")!.hits, 9);
  }));

Deno.test("a failed inventory write is retried at the next flush without counting anything twice", () => {
  let failAt = 0;
  // Fails inside the write transaction, after some rows are already added.
  const flaky = (repo: ApiSecEndpointsRepo): ApiSecEndpointsRepo => ({
    ...repo,
    write(rows, gone, combine) {
      let n = 0;
      repo.write(rows, gone, (s, add) => {
        if (++n === failAt) throw new Error("connection lost");
        return combine(s, add);
      });
    },
  });
  return withTwo(({ db, a, b }) => {
    b.sample(sample("/a"));
    ok(b.flush());
    a.sample(sample("/a"));
    a.sample(sample("/a"));
    a.sample(sample("/b"));
    failAt = 2;
    assertEquals(a.flush(), false);
    assertEquals(stored(db).get("/a")!.hits, 1, "the failed write is rolled back");
    assertEquals(stored(db).has("/b"), false);
    a.sample(sample("/b"));
    b.sample(sample("/a"));
    ok(b.flush());
    failAt = 0;
    ok(a.flush());
    assertEquals(stored(db).get("/a")!.hits, 4);
    assertEquals(stored(db).get("/b")!.hits, 2);
    ok(a.flush());
    assertEquals(stored(db).get("/a")!.hits, 4, "written once");
  }, flaky);
});

Deno.test("a template merged away on one controller takes the other's stored counts into its new one", () =>
  withTwo(({ db, a, b, clock }) => {
    for (let i = 0; i < 3; i++) a.sample(sample("/u/alice/posts"));
    ok(a.flush());
    for (let i = 0; i < 2; i++) b.sample(sample("/u/alice/posts"));
    ok(b.flush());
    assertEquals(stored(db).get("/u/alice/posts")!.hits, 5);
    // Enough distinct users on a: the position becomes a parameter there.
    for (let i = 0; i <= VARIETY_LIMIT; i++) a.sample(sample(`/u/user${i}x/posts`));
    ok(a.flush());
    const merged = stored(db);
    assertEquals([...merged.keys()], ["/u/{param}/posts"]);
    assertEquals(merged.get("/u/{param}/posts")!.hits, 5 + VARIETY_LIMIT + 1);
    // b still has the literal template and stores it again; a's read merges it back in.
    b.sample(sample("/u/alice/posts"));
    ok(b.flush());
    assertEquals(stored(db).get("/u/alice/posts")!.hits, 1);
    clock.advance(READ_REFRESH_MS);
    assertEquals(a.endpoints().map((e) => [e.template, e.hits]), [
      ["/u/{param}/posts", VARIETY_LIMIT + 7],
    ]);
    ok(a.flush());
    assertEquals([...stored(db)].map(([t, e]) => [t, e.hits]), [
      ["/u/{param}/posts", VARIETY_LIMIT + 7],
    ]);
    // b's read learns the parameter from the store: its next samples count there.
    assertEquals(b.endpoints().map((e) => [e.template, e.hits]), [
      ["/u/{param}/posts", VARIETY_LIMIT + 7],
    ]);
    b.sample(sample("/u/zoe/posts"));
    ok(b.flush());
    assertEquals([...stored(db)].map(([t, e]) => [t, e.hits]), [
      ["/u/{param}/posts", VARIETY_LIMIT + 8],
    ]);
  }));

Deno.test("clearing the inventory on one controller leaves the other adding only what it samples afterwards", () =>
  withTwo(({ db, a, b, clock }) => {
    a.sample(sample("/x"));
    b.sample(sample("/x"));
    ok(a.flush());
    ok(b.flush());
    a.clear();
    assertEquals(stored(db).size, 0);
    b.sample(sample("/x"));
    ok(b.flush());
    assertEquals(stored(db).get("/x")!.hits, 1, "b's earlier counts are not written back");
    clock.advance(READ_REFRESH_MS);
    assertEquals(a.endpoints().map((e) => [e.template, e.hits]), [["/x", 1]]);
  }));

Deno.test("a read that cannot reach the store answers from the view and tries again at the next read", () => {
  let down = false;
  const failing = (repo: ApiSecEndpointsRepo): ApiSecEndpointsRepo => ({
    ...repo,
    write: (...args) => {
      if (down) throw new Error("store unavailable");
      repo.write(...args);
    },
    load: (limit) => {
      if (down) throw new Error("store unavailable");
      return repo.load(limit);
    },
  });
  return withTwo(({ db, a, b, clock }) => {
    b.sample(sample("/x"));
    ok(b.flush());
    a.sample(sample("/x"));
    down = true;
    clock.advance(READ_REFRESH_MS);
    assertEquals(a.endpoints().map((e) => [e.template, e.hits]), [["/x", 1]], "a's own view");
    down = false;
    assertEquals(a.endpoints().map((e) => [e.template, e.hits]), [["/x", 2]]);
    assertEquals(stored(db).get("/x")!.hits, 2);
  }, failing);
});
