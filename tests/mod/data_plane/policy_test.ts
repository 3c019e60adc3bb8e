import { assertEquals, ok } from "../../_helpers/assert.ts";
import { siteInput } from "../../_helpers/sites.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { compilePolicy, createPolicy, hostOf, upstreamOf } from "../../../mod/data_plane/policy.ts";
import type { Site, StoredSiteRow } from "../../../mod/data_plane/site_schema.ts";

function site(id: string, hosts: string[], upstreams = ["http://127.0.0.1:9"]): Site {
  return {
    ...siteInput({ name: id, hosts, upstreams }),
    id,
    tls: null,
    created_at: 0,
    updated_at: 0,
  };
}

Deno.test("hostOf() drops the port and trailing dot and folds case", () => {
  assertEquals(hostOf("Shop.Test:8080"), "shop.test");
  assertEquals(hostOf("shop.test."), "shop.test");
  assertEquals(hostOf("[::1]:8080"), "[::1]");
  assertEquals(hostOf("127.0.0.1"), "127.0.0.1");
});

Deno.test("compilePolicy() matches exact hosts before wildcards and the longest wildcard first", () => {
  const policy = compilePolicy(
    [
      site("exact", ["api.example.com"]),
      site("any", ["*.example.com"]),
      site("deep", ["*.eu.example.com"]),
    ],
    new FakeClock(),
    1,
  );
  assertEquals(policy.match("api.example.com")?.id, "exact");
  assertEquals(policy.match("API.example.com:443")?.id, "exact");
  assertEquals(policy.match("www.example.com")?.id, "any");
  assertEquals(policy.match("a.b.example.com")?.id, "any");
  assertEquals(policy.match("x.eu.example.com")?.id, "deep");
  assertEquals(policy.match("example.com"), undefined);
  assertEquals(policy.match("example.org"), undefined);
  assertEquals(policy.match(null), undefined);
});

Deno.test("compilePolicy() keeps an unchanged upstream pool and its health across rebuilds", () => {
  const clock = new FakeClock();
  const first = compilePolicy([site("a", ["a.test"])], clock, 1);
  const pool = first.sites[0]!.pool;
  pool.fail(pool.upstreams[0]!);
  const second = compilePolicy([site("a", ["a.test", "b.test"])], clock, 2, { previous: first });
  ok(second.sites[0]!.pool === pool);
  const third = compilePolicy([site("a", ["a.test"], ["http://127.0.0.1:10"])], clock, 3, {
    previous: second,
  });
  ok(third.sites[0]!.pool !== pool);
  // The old policy object is untouched: requests in flight keep using it.
  assertEquals(first.match("b.test"), undefined);
  assertEquals(second.match("b.test")?.id, "a");
});

/** A policy over an in-memory list of stored rows, counting its builds. */
function storedPolicy() {
  const rows: StoredSiteRow[] = [];
  let builds = 0;
  const policy = createPolicy({
    listSites: () => {
      builds++;
      return rows;
    },
    clock: new FakeClock(0),
  });
  const put = (id: string, host: string, updated = 0) => {
    const at = rows.findIndex((r) => r.id === id);
    const row: StoredSiteRow = {
      id,
      name: id,
      config: JSON.stringify(siteInput({ name: id, hosts: [host] })),
      created_at: 0,
      updated_at: updated,
    };
    if (at >= 0) rows[at] = row;
    else rows.push(row);
  };
  return { policy, put, builds: () => builds };
}

Deno.test("a rebuild reuses the compiled site of every unchanged row and compiles the changed one", () => {
  const { policy, put } = storedPolicy();
  put("a", "a.test");
  put("b", "b.test");
  const first = policy.rebuild();
  put("b", "b2.test", 1);
  const second = policy.rebuild();
  ok(second.sites[0] === first.sites[0], "site a is the same compiled object");
  ok(second.sites[1] !== first.sites[1], "site b is compiled again");
  assertEquals(second.match("b2.test")?.id, "b");
});

Deno.test("outside a coalesced write every rebuild is immediate; inside, a burst shares builds and each write reads itself", async () => {
  const { policy, put, builds } = storedPolicy();
  // Direct callers (the CLI, tests, background tasks) see their change at once, however often.
  for (let i = 0; i < 5; i++) {
    put(`d${i}`, `d${i}.test`);
    policy.rebuild();
    assertEquals(policy.current.match(`d${i}.test`)?.id, `d${i}`);
  }
  // 100 concurrent management writes: far fewer builds, every write in force when it answers.
  const before = builds();
  await Promise.all(Array.from({ length: 100 }, (_, i) =>
    policy.coalesce(async () => {
      await Promise.resolve();
      put(`w${i}`, `w${i}.test`);
      policy.rebuild();
    }).then(() => assertEquals(policy.current.match(`w${i}.test`)?.id, `w${i}`))));
  const burst = builds() - before;
  ok(burst >= 1 && burst <= 5, `${burst} builds for 100 writes`);
  // Sequential writes each read their own write as well.
  for (let i = 0; i < 5; i++) {
    await policy.coalesce(() => {
      put(`s${i}`, `s${i}.test`);
      policy.rebuild();
      return Promise.resolve();
    });
    assertEquals(policy.current.match(`s${i}.test`)?.id, `s${i}`);
  }
  // A direct rebuild while a coalesced one is pending runs it at once.
  const pendingWrite = policy.coalesce(() => {
    put("p1", "p1.test");
    policy.rebuild();
    return Promise.resolve();
  });
  put("p2", "p2.test");
  policy.rebuild();
  assertEquals(policy.current.match("p1.test")?.id, "p1");
  assertEquals(policy.current.match("p2.test")?.id, "p2");
  await pendingWrite;
});

Deno.test("upstreamOf() finds a site's upstream through an index, not a search of the site list per lookup", () => {
  // A data worker's report names every upstream that answered in the last second: with a search
  // of the site list per entry, 3,000 sites cost ~4.5 million site reads a report (~100 ms of the
  // main thread each second, each worker; docs/data-plane.md).
  const n = 3000;
  const sites = Array.from(
    { length: n },
    (_, i) => site(`s${i}`, [`s${i}.test`], [`http://10.0.${i >> 8}.${i & 255}:8080`]),
  );
  const compiled = compilePolicy(sites, new FakeClock(), 1);
  let reads = 0;
  const counted = {
    sites: new Proxy(compiled.sites, {
      get(target, key, receiver) {
        if (typeof key === "string" && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
    }),
  };
  for (let i = n - 1; i >= 0; i--) {
    const u = upstreamOf(counted, `s${i}`, `http://10.0.${i >> 8}.${i & 255}:8080`);
    ok(u === compiled.sites[i]!.pool.upstreams[0], `s${i}`);
  }
  assertEquals(upstreamOf(counted, "s1", "http://10.0.0.2:8080"), undefined);
  assertEquals(upstreamOf(counted, "nope", "http://10.0.0.1:8080"), undefined);
  // The index is built once for the policy: one read of each site.
  ok(reads <= n, `${reads} site reads for ${n + 2} lookups`);
  // Another policy (a swap) gets its own index.
  const next = compilePolicy(sites.slice(1), new FakeClock(), 2, { previous: compiled });
  assertEquals(upstreamOf(next, "s0", "http://10.0.0.0:8080"), undefined);
  ok(upstreamOf(next, "s1", "http://10.0.0.1:8080") === compiled.sites[1]!.pool.upstreams[0]);
});
