import { assertEquals } from "../../_helpers/assert.ts";
import type { PolicyObjectRow } from "../../../db/policy_objects_repo.ts";
import {
  applyDelta,
  createSnapshotTap,
  deltaOf,
  replaySnapshot,
} from "../../../mod/data_plane/policy_snapshot.ts";

const row = (id: string, config: string, updated_at = 1): PolicyObjectRow => ({
  id,
  kind: "ip_entry",
  site_id: null,
  position: 0,
  config,
  created_at: 1,
  updated_at,
});

Deno.test("the tap records one build's reads, and a replay answers them back", () => {
  const tap = createSnapshotTap();
  const rows = { ip_entry: [row("a", "{}")], custom_rule: [] as PolicyObjectRow[] };
  tap.sites([]);
  const source = tap.source({
    rows: (k) => rows[k as keyof typeof rows] ?? [],
    singleton: (k) => k === "rate_limit" ? '{"enabled":true}' : undefined,
  });
  source.rows("ip_entry");
  source.rows("custom_rule");
  source.singleton("rate_limit");
  tap.get({ get: (kind, id) => kind === "apisec" ? row(id, '{"x":1}') : undefined })
    .get("apisec", "apisec");
  const snap = tap.snapshot(7);
  const replay = replaySnapshot(() => structuredClone(snap));
  assertEquals(snap.version, 7);
  assertEquals(replay.source.rows("ip_entry"), rows.ip_entry);
  assertEquals(replay.source.rows("never_read"), []);
  assertEquals(replay.source.singleton("rate_limit"), '{"enabled":true}');
  assertEquals(replay.repo.get("apisec", "apisec")?.config, '{"x":1}');
  tap.sites([]);
  assertEquals(tap.snapshot(8).rows, {}, "a new build starts a new recording");
});

Deno.test("a delta leaves out unchanged row lists and adds up to the full snapshot", () => {
  const base = {
    version: 1,
    sites: [],
    singletons: {},
    objects: {},
    rows: { ip_entry: [row("a", "{}"), row("b", "{}")], custom_rule: [row("r", "{}")] },
  };
  // The same rows read again (new objects), and one changed rule.
  const next = {
    ...base,
    version: 2,
    rows: { ip_entry: [row("a", "{}"), row("b", "{}")], custom_rule: [row("r", '{"x":1}', 2)] },
  };
  const delta = deltaOf(base, next);
  assertEquals(delta.kept, ["ip_entry"]);
  assertEquals(Object.keys(delta.rows), ["custom_rule"]);
  assertEquals(applyDelta(base, structuredClone(delta)), next);
  assertEquals(deltaOf(undefined, next).kept, [], "the first one is whole");
});
