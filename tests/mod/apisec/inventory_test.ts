import { assertEquals, ok } from "../../_helpers/assert.ts";
import { sample, T0 } from "../../_helpers/apisec_samples.ts";
import { testStore } from "../../_helpers/store.ts";
import { createApiSecEndpointsRepo } from "../../../db/apisec_endpoints_repo.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { VARIETY_LIMIT } from "../../../mod/apisec/endpoint_table.ts";
import { createInventory } from "../../../mod/apisec/inventory.ts";

function inventoryOn(db: Parameters<typeof createApiSecEndpointsRepo>[0], maxEndpoints?: number) {
  return createInventory({
    repo: createApiSecEndpointsRepo(db),
    clock: new FakeClock(T0),
    logger: createMemoryLogger(),
    maxEndpoints,
  });
}

Deno.test("the inventory clusters numbers, UUIDs and hex ids into {id} and keeps per-endpoint statistics", async () => {
  await using store = await testStore();
  const inv = inventoryOn(store.db);
  inv.sample(sample("/users/123/orders/9f1c2a7b3d4e"));
  inv.sample(
    sample("/users/77/orders/0b9e8c7d6f5a", {
      method: "POST",
      status: 422,
      bodyNames: ["sku"],
      contentType: "application/json",
      time: T0 + 5,
    }),
  );
  inv.sample(
    sample("/users/5/orders/3f2504e0-4f89-11d3-9a0c-0305e82c3301", { queryNames: ["page"] }),
  );
  inv.sample(sample("/health"));
  const all = inv.endpoints();
  assertEquals(all.map((e) => e.template).sort(), ["/health", "/users/{id}/orders/{id}"]);
  const e = all.find((x) => x.template === "/users/{id}/orders/{id}")!;
  assertEquals(e.hits, 3);
  assertEquals(e.methods, { GET: 2, POST: 1 });
  assertEquals(e.statuses, { "2xx": 2, "4xx": 1 });
  assertEquals([e.first_seen, e.last_seen], [T0, T0 + 5]);
  assertEquals(e.query_params, ["page"]);
  assertEquals(e.body_params, ["sku"]);
  assertEquals(e.content_types, ["application/json"]);
});

Deno.test("a position whose variety passes the limit becomes {param}, merging what was seen under it", async () => {
  await using store = await testStore();
  const inv = inventoryOn(store.db);
  for (let i = 0; i <= VARIETY_LIMIT; i++) {
    inv.sample(
      sample(
        `/u/user${String.fromCharCode(97 + (i % 26))}${"x".repeat(Math.floor(i / 26))}/profile`,
      ),
    );
  }
  inv.sample(sample("/u/somebody-new/profile"));
  inv.sample(sample("/static-thing"));
  const templates = inv.endpoints().map((e) => e.template).sort();
  assertEquals(templates, ["/static-thing", "/u/{param}/profile"]);
  assertEquals(
    inv.endpoints().find((e) => e.template === "/u/{param}/profile")!.hits,
    VARIETY_LIMIT + 2,
  );
  // A few distinct children stay literal.
  inv.sample(sample("/api/users"));
  inv.sample(sample("/api/orders"));
  ok(inv.endpoints().some((e) => e.template === "/api/orders"));
});

Deno.test("the inventory is stored in batches and survives a restart; the endpoint bound holds", async () => {
  await using store = await testStore();
  const inv = inventoryOn(store.db, 3);
  for (const p of ["/a", "/b", "/c", "/d", "/e"]) inv.sample(sample(p));
  assertEquals(inv.stats().endpoints, 0, "nothing is clustered until drained");
  const count = () =>
    (store.db.prepare("SELECT count(*) AS n FROM apisec_endpoints").get() as { n: number }).n;
  assertEquals(count(), 0);
  inv.flush();
  assertEquals(inv.stats(), { endpoints: 3, overflow: 2, dropped: 0, buffered: 0 });
  assertEquals(count(), 3);
  const again = inventoryOn(store.db, 3);
  assertEquals(again.endpoints().map((e) => e.template).sort(), ["/a", "/b", "/c"]);
  assertEquals(again.endpoints()[0]!.hits, 1);
});

Deno.test("a path seen before and remembered follows the clustering when its position becomes a parameter", async () => {
  await using store = await testStore();
  const inv = inventoryOn(store.db);
  for (let i = 0; i < 3; i++) inv.sample(sample("/u/alice/posts"));
  assertEquals(inv.endpoints().map((e) => e.template), ["/u/alice/posts"]);
  for (let i = 0; i <= VARIETY_LIMIT; i++) {
    inv.sample(sample(`/u/user${String.fromCharCode(97 + (i % 26))}${i}x/posts`));
  }
  inv.sample(sample("/u/alice/posts"));
  const all = inv.endpoints();
  assertEquals(all.map((e) => [e.template, e.hits]), [["/u/{param}/posts", VARIETY_LIMIT + 5]]);
});

Deno.test("a large buffer is drained at the next macrotask once the inventory runs", async () => {
  await using store = await testStore();
  const inv = inventoryOn(store.db);
  inv.start();
  try {
    for (let i = 0; i < 600; i++) inv.sample(sample(`/items/${i}`));
    assertEquals(inv.stats().buffered, 600);
    // The drain is due at the next macrotask: a timer set after it runs after it.
    await new Promise((r) => setTimeout(r, 0));
    assertEquals(inv.stats(), { endpoints: 1, overflow: 0, dropped: 0, buffered: 0 });
  } finally {
    inv.stop();
  }
});
