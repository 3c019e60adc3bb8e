import { assertEquals } from "../../_helpers/assert.ts";
import { sample, T0 } from "../../_helpers/apisec_samples.ts";
import {
  blankEndpoint,
  combineStats,
  countSample,
  type Endpoint,
  type EndpointStats,
  parseStats,
  type Sample,
  statsJson,
} from "../../../mod/apisec/endpoint_stats.ts";
import { EndpointTable, VARIETY_LIMIT } from "../../../mod/apisec/endpoint_table.ts";

function counted(template: string, samples: readonly Sample[]): Endpoint {
  const e = blankEndpoint(samples[0]!, template);
  for (const s of samples) countSample(e, s);
  return e;
}

const stats = (json: string): EndpointStats => parseStats(json)!;

Deno.test("combineStats() adds counts, keeps the earlier first seen and the later last seen with its path", () => {
  const stored = counted("/a/{id}", [
    sample("/a/1", { time: T0 + 10 }),
    sample("/a/2", { method: "POST", status: 404, time: T0 + 20 }),
  ]);
  const delta = counted("/a/{id}", [
    sample("/a/3", { time: T0 + 5 }),
    sample("/a/4", { status: 500, time: T0 + 30 }),
    sample("/a/5", { method: "DELETE", time: T0 + 25 }),
  ]);
  const out = stats(combineStats(statsJson(stored), statsJson(delta)));
  assertEquals(out.hits, 5);
  assertEquals(out.methods, { GET: 3, POST: 1, DELETE: 1 });
  assertEquals(out.statuses, { "2xx": 3, "4xx": 1, "5xx": 1 });
  assertEquals([out.first_seen, out.last_seen, out.example_path], [T0 + 5, T0 + 30, "/a/4"]);
  // An older delta leaves the last seen and its path alone.
  const older = counted("/a/{id}", [sample("/a/9", { time: T0 + 1 })]);
  const again = stats(combineStats(JSON.stringify(out), statsJson(older)));
  assertEquals([again.first_seen, again.last_seen, again.example_path], [T0 + 1, T0 + 30, "/a/4"]);
  assertEquals(again.hits, 6);
});

Deno.test("combineStats() unions the names within their bounds and stores a delta as is without a row", () => {
  const many = Array.from({ length: 60 }, (_, i) => `p${i}`);
  const stored = counted("/q", [
    sample("/q", { queryNames: many.slice(0, 48), bodyNames: ["a"], contentType: "text/plain" }),
  ]);
  const delta = counted("/q", [
    sample("/q", { queryNames: ["p0", ...many.slice(40)], bodyNames: ["a", "b"] }),
    sample("/q", { contentType: "application/json" }),
  ]);
  const out = stats(combineStats(statsJson(stored), statsJson(delta)));
  assertEquals(out.query_params, many.slice(0, 50), "50 names at most, the stored ones first");
  assertEquals(out.body_params, ["a", "b"]);
  assertEquals(out.content_types, ["text/plain", "application/json"]);
  assertEquals(combineStats(undefined, statsJson(delta)), statsJson(delta));
  assertEquals(
    combineStats("not json", statsJson(delta)),
    statsJson(delta),
    "a broken row is replaced",
  );
  assertEquals(combineStats('{"hits":"x"}', statsJson(delta)), statsJson(delta));
});

Deno.test("EndpointTable.changes() holds what was counted since the last write, and keeps it until written", () => {
  const table = new EndpointTable(100, [{
    site_id: "s1",
    template: "/a",
    data: statsJson(counted("/a", [sample("/a"), sample("/a")])),
    last_seen: T0,
  }]);
  assertEquals(table.changes(), undefined, "loaded rows are not written back");
  table.add(sample("/a", { time: T0 + 1 }));
  table.add(sample("/b", { time: T0 + 2 }));
  assertEquals(table.values().find((e) => e.template === "/a")!.hits, 3, "the view adds up");
  const first = table.changes()!;
  assertEquals(first.rows.map((r) => [r.template, stats(r.data).hits]), [["/a", 1], ["/b", 1]]);
  // Not written (a failed write): the next changes add to the same deltas.
  table.add(sample("/a", { time: T0 + 3 }));
  const second = table.changes()!;
  assertEquals(second.rows.map((r) => [r.template, stats(r.data).hits]), [["/a", 2], ["/b", 1]]);
  assertEquals(second.rows[0]!.last_seen, T0 + 3);
  table.written();
  assertEquals(table.changes(), undefined);
  table.add(sample("/b", { time: T0 + 4 }));
  assertEquals(table.changes()!.rows.map((r) => [r.template, stats(r.data).hits]), [["/b", 1]]);
});

Deno.test("EndpointTable names the merged-away templates with their new one, deltas merged along", () => {
  const table = new EndpointTable(1000, []);
  table.add(sample("/u/alice/posts"));
  table.add(sample("/u/alice/posts"));
  table.written();
  table.add(sample("/u/alice/posts"));
  for (let i = 0; i <= VARIETY_LIMIT; i++) table.add(sample(`/u/user${i}x/posts`));
  const c = table.changes()!;
  assertEquals(c.rows.map((r) => [r.template, stats(r.data).hits]), [
    ["/u/{param}/posts", VARIETY_LIMIT + 2],
  ]);
  const gone = c.gone.filter((g) => g.template === "/u/alice/posts");
  assertEquals(gone, [{ site_id: "s1", template: "/u/alice/posts", into: "/u/{param}/posts" }]);
  assertEquals(c.gone.every((g) => g.into === "/u/{param}/posts"), true);
  assertEquals(table.values().map((e) => [e.template, e.hits]), [
    ["/u/{param}/posts", VARIETY_LIMIT + 4],
  ]);
});

Deno.test("EndpointTable.refresh() shows the stored rows plus what is not written, and learns their parameters", () => {
  const table = new EndpointTable(1000, []);
  table.add(sample("/u/bob/posts", { time: T0 + 9 }));
  table.add(sample("/other"));
  // Another controller merged /u/... into /u/{param}/posts and stored it.
  const row = (template: string, hits: number) => ({
    site_id: "s1",
    template,
    data: statsJson(counted(template, Array.from({ length: hits }, () => sample("/u/x/posts")))),
    last_seen: T0,
  });
  table.refresh([row("/u/{param}/posts", 7), row("/u/carol/posts", 2)]);
  assertEquals(
    table.values().map((e) => [e.template, e.hits]).sort(),
    [["/other", 1], ["/u/{param}/posts", 10]],
  );
  const c = table.changes()!;
  assertEquals(c.rows.map((r) => [r.template, stats(r.data).hits]).sort(), [
    ["/other", 1],
    ["/u/{param}/posts", 1],
  ]);
  assertEquals(c.gone.map((g) => [g.template, g.into]).sort(), [
    ["/u/bob/posts", "/u/{param}/posts"],
    ["/u/carol/posts", "/u/{param}/posts"],
  ]);
  table.add(sample("/u/dave/posts"));
  assertEquals(table.values().find((e) => e.template === "/u/{param}/posts")!.hits, 11);
});
