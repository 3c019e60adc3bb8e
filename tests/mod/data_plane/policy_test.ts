import { assertEquals, ok } from "../../_helpers/assert.ts";
import { siteInput } from "../../_helpers/sites.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { compilePolicy, hostOf } from "../../../mod/data_plane/policy.ts";
import type { Site } from "../../../mod/data_plane/site_schema.ts";

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
  const second = compilePolicy([site("a", ["a.test", "b.test"])], clock, 2, first);
  ok(second.sites[0]!.pool === pool);
  const third = compilePolicy([site("a", ["a.test"], ["http://127.0.0.1:10"])], clock, 3, second);
  ok(third.sites[0]!.pool !== pool);
  // The old policy object is untouched: requests in flight keep using it.
  assertEquals(first.match("b.test"), undefined);
  assertEquals(second.match("b.test")?.id, "a");
});
