import { assertEquals } from "../../_helpers/assert.ts";
import type { PolicyObjectRow } from "../../../db/policy_objects_repo.ts";
import {
  applyDelta,
  createSnapshotTap,
  deltaOf,
  type PolicySnapshot,
  replaySnapshot,
} from "../../../mod/data_plane/policy_snapshot.ts";
import { createProtectionCompiler, KIND } from "../../../mod/protection/protection_compile.ts";
import { parseCidr, parseIp } from "../../../engine/ip_address.ts";
import type { IpListItem } from "../../../engine/ip_list.ts";
import { pendingLimit } from "../../../engine/ip_list_fold.ts";
import { ipListUpdater } from "../../../mod/protection/ip_list_updater.ts";

const row = (id: string, config: string, updated_at = 1): PolicyObjectRow => ({
  id,
  kind: "acl_rule",
  site_id: null,
  position: 0,
  config,
  created_at: 1,
  updated_at,
});

Deno.test("the tap records one build's reads, and a replay answers them back", () => {
  const tap = createSnapshotTap();
  const rows = { acl_rule: [row("a", "{}")], custom_rule: [] as PolicyObjectRow[] };
  tap.sites([]);
  const source = tap.source({
    rows: (k) => rows[k as keyof typeof rows] ?? [],
    singleton: (k) => k === "rate_limit" ? '{"enabled":true}' : undefined,
  });
  source.rows("acl_rule");
  source.rows("custom_rule");
  source.singleton("rate_limit");
  tap.get({ get: (kind, id) => kind === "apisec" ? row(id, '{"x":1}') : undefined })
    .get("apisec", "apisec");
  const snap = tap.snapshot(7);
  const replay = replaySnapshot(() => structuredClone(snap));
  assertEquals(snap.version, 7);
  assertEquals(replay.source.rows("acl_rule"), rows.acl_rule);
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
    rows: { acl_rule: [row("a", "{}"), row("b", "{}")], custom_rule: [row("r", "{}")] },
  };
  // The same rows read again (new objects), and one changed rule.
  const next = {
    ...base,
    version: 2,
    rows: { acl_rule: [row("a", "{}"), row("b", "{}")], custom_rule: [row("r", '{"x":1}', 2)] },
  };
  const delta = deltaOf(base, next);
  assertEquals(delta.kept, ["acl_rule"]);
  assertEquals(Object.keys(delta.rows), ["custom_rule"]);
  assertEquals(applyDelta(base, structuredClone(delta)), next);
  assertEquals(deltaOf(undefined, next).kept, [], "the first one is whole");
});

Deno.test("the IP list travels compiled: its rows are not recorded, an unchanged list is not sent again", () => {
  const entry = (id: string, cidr: string) =>
    row(
      id,
      JSON.stringify({ action: "block", cidr, site_id: null, path_prefix: null, expires_at: null }),
    );
  const stored: Record<string, PolicyObjectRow[]> = {
    [KIND.ip]: [entry("a", "192.0.2.0/24"), entry("b", "198.51.100.7/32")],
  };
  const tap = createSnapshotTap();
  const compile = createProtectionCompiler();
  const build = () => {
    tap.sites([]);
    const compiled = compile(tap.source({
      rows: (k) => stored[k] ?? [],
      singleton: () => undefined,
    }));
    return { compiled, snapshot: tap.snapshot(1, compiled.ipList.state) };
  };
  const first = build();
  assertEquals(first.snapshot.rows[KIND.ip], undefined, "100,000 rows are not kept for workers");
  // A worker compiles from the snapshot: the list is the main thread's tables, copied.
  const worker = createProtectionCompiler();
  let received = structuredClone(deltaOf(undefined, first.snapshot));
  let held = applyDelta(first.snapshot, received);
  const inWorker = () => worker(replaySnapshot(() => held).source).ipList;
  const ip = (text: string) => parseIp(text)!;
  assertEquals(inWorker().match(ip("192.0.2.9"), "s", "/", 0)?.id, "a");
  assertEquals(inWorker().match(ip("203.0.113.1"), "s", "/", 0), undefined);
  // Rebuilt without a change: the compiler keeps its list, so the delta keeps it too.
  const again = build();
  const kept = deltaOf(first.snapshot, again.snapshot);
  assertEquals(kept.kept.includes(KIND.ip), true);
  assertEquals(kept.ipList, undefined);
  held = applyDelta(held, structuredClone(kept));
  assertEquals(inWorker().size, 2);
  // A changed list is sent whole, compiled.
  stored[KIND.ip] = [...stored[KIND.ip]!, entry("c", "203.0.113.0/24")];
  const changed = build();
  received = structuredClone(deltaOf(again.snapshot, changed.snapshot));
  assertEquals(received.kept.includes(KIND.ip), false);
  held = applyDelta(held, received);
  assertEquals(inWorker().match(ip("203.0.113.1"), "s", "/", 0)?.id, "c");
});

/** Every typed array in `value`, with where it lies. */
function typedArrays(value: unknown, at = "", out: Array<[string, ArrayBufferView]> = []) {
  if (ArrayBuffer.isView(value)) out.push([at, value]);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) typedArrays(v, `${at}.${k}`, out);
  }
  return out;
}

Deno.test("a changed IP list sends only its patch, and a folded base goes as shared memory", () => {
  const item = (i: number): IpListItem => {
    const cidr = `10.0.${i >> 8}.${i & 255}/32`;
    return [parseCidr(cidr)!, {
      id: `e${i}`,
      action: i % 7 === 0 ? "allow" : "block",
      cidr,
      siteId: i % 3 === 0 ? "shop" : null,
      pathPrefix: null,
      expiresAt: null,
    }, { position: i, createdAt: 0 }];
  };
  const updater = ipListUpdater(Array.from({ length: 1000 }, (_, i) => item(i)));
  const snapshot = (version: number): PolicySnapshot => ({
    version,
    sites: [],
    rows: {},
    singletons: {},
    objects: {},
    ipList: updater.list.state,
  });
  let sent = snapshot(1);
  // The worker's copy, as `postMessage` gives it.
  let held = structuredClone(sent);
  let patches = 0;
  let folds = 0;
  for (let k = 0; k < pendingLimit(1000) + 10; k++) {
    const i = 1000 + k;
    const base = updater.list.state.base;
    updater.apply([`e${i}`, `e${k}`], (id) => id === `e${i}` ? item(i) : undefined);
    const next = snapshot(k + 2);
    const delta = deltaOf(sent, next);
    if (updater.list.state.base === base) {
      assertEquals(delta.ipList, undefined, "the base is not sent again");
      assertEquals(delta.kept.includes(`${KIND.ip}:base`), true);
      patches++;
    } else {
      // The new base goes whole, but every byte of it is shared: `postMessage` copies none.
      folds++;
      const arrays = typedArrays(delta.ipList!.base);
      assertEquals(arrays.length > 10, true);
      for (const [at, a] of arrays) {
        assertEquals(a.buffer instanceof SharedArrayBuffer, true, `${at} is shared memory`);
      }
    }
    held = applyDelta(held, structuredClone(delta));
    assertEquals(held.ipList, next.ipList, `the worker holds the main thread's list (${k})`);
    sent = next;
  }
  // Each change adds one entry and drops one: a fold every half limit.
  assertEquals(folds, 2);
  assertEquals(patches + folds, pendingLimit(1000) + 10);
});
