import { assertEquals, ok } from "../../_helpers/assert.ts";
import { PEM_PRIVATE_KEY, siteInput, storedSiteConfigs, SYSTEM } from "../../_helpers/sites.ts";
import { testStore } from "../../_helpers/store.ts";
import { createAuditRepo } from "../../../db/audit_repo.ts";
import { createClusterPolicyRepo } from "../../../db/cluster_policy_repo.ts";
import { createSitesRepo } from "../../../db/sites_repo.ts";
import { policyVersion } from "../../../mod/cluster/policy_sync.ts";
import { createAudit } from "../../../mod/core/audit.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createSyncSecretBox, TOTP_KEY_FILE } from "../../../mod/core/secret_box.ts";
import { createPolicy } from "../../../mod/data_plane/policy.ts";
import {
  createSiteKeys,
  openedPolicyRepo,
  resealLegacy,
  sealedSitesRepo,
} from "../../../mod/data_plane/site_keys.ts";
import { createSites } from "../../../mod/data_plane/sites.ts";
import { createCa, createLeaf, type Pem } from "../../../mod/tls/x509.ts";

async function leaf(host: string): Promise<Pem> {
  const now = Date.now();
  const ca = await createCa("test CA", now, systemRandom);
  return await createLeaf(ca, { commonName: host, dnsNames: [host] }, now, systemRandom);
}

async function setup() {
  const store = await testStore();
  const clock = new FakeClock();
  const unreadable: string[] = [];
  const keys = createSiteKeys({
    box: createSyncSecretBox(`${store.dir}/${TOTP_KEY_FILE}`, systemRandom),
    unreadable: (id) => unreadable.push(id),
  });
  const raw = createSitesRepo(store.db);
  const repo = sealedSitesRepo(raw, keys);
  const policy = createPolicy({ listSites: () => repo.list(), clock });
  const audit = createAudit({ repo: createAuditRepo(store.db), clock });
  const sites = createSites({ db: store.db, repo, audit, policy, clock, random: systemRandom });
  return { store, keys, raw, repo, policy, sites, unreadable };
}

Deno.test("a site's key is stored sealed, opened for the policy, and bound to its site", async () => {
  const { store, raw, repo, policy, sites, unreadable } = await setup();
  await using _ = store;
  const pem = await leaf("shop.test");
  const created = sites.create(siteInput({ tls: pem }), SYSTEM);
  const stored = raw.get(created.id)!;
  ok(!PEM_PRIVATE_KEY.test(stored.config));
  ok(!storedSiteConfigs(`${store.dir}/waf.db`).some((c) => PEM_PRIVATE_KEY.test(c)));
  assertEquals(policy.current.match("shop.test")?.tls?.key, pem.key);
  assertEquals(JSON.parse(repo.get(created.id)!.config).tls.key, pem.key);

  // A sealed key moved onto another site does not open there: that site gets no TLS.
  const other = sites.create(siteInput({ name: "other", hosts: ["other.test"] }), SYSTEM);
  const moved = JSON.parse(stored.config);
  const otherConfig = JSON.parse(raw.get(other.id)!.config);
  raw.update({
    id: other.id,
    name: "other",
    config: JSON.stringify({ ...otherConfig, tls: moved.tls }),
    updated_at: 1,
  });
  assertEquals(JSON.parse(repo.get(other.id)!.config).tls, null);
  repo.list();
  assertEquals(unreadable, [other.id], "reported once, however often it is read");
});

Deno.test("a plain-text key of an older build is read as it is, then sealed in place", async () => {
  const { store, keys, raw, repo, policy } = await setup();
  await using _ = store;
  const pem = await leaf("old.test");
  const config = JSON.stringify({
    hosts: ["old.test"],
    upstreams: ["http://127.0.0.1:9"],
    tls: pem,
  });
  raw.insert({ id: "legacy", name: "old", config, created_at: 5, updated_at: 7 });
  assertEquals(JSON.parse(repo.get("legacy")!.config).tls.key, pem.key, "served before sealing");
  policy.rebuild();
  assertEquals(policy.current.match("old.test")?.tls?.key, pem.key);
  assertEquals(store.transaction(() => resealLegacy(raw, keys)), 1);
  assertEquals(store.transaction(() => resealLegacy(raw, keys)), 0, "once");
  const row = raw.get("legacy")!;
  ok(!PEM_PRIVATE_KEY.test(row.config));
  assertEquals(row.updated_at, 7);
  assertEquals(JSON.parse(repo.get("legacy")!.config).tls.key, pem.key);
});

Deno.test("the cluster snapshot carries the opened key; a node seals it with its own key file", async () => {
  const controller = await setup();
  await using _c = controller.store;
  const node = await setup();
  await using _n = node.store;
  const pem = await leaf("shop.test");
  controller.sites.create(siteInput({ tls: pem }), SYSTEM);
  const source = openedPolicyRepo(createClusterPolicyRepo(controller.store.db), controller.keys);
  const rows = source.read();
  assertEquals(JSON.parse(rows.sites[0]!.config).tls.key, pem.key, "the node needs the key");
  // The version hashes the opened form: re-sealing (a fresh IV) does not change it.
  const version = policyVersion(rows);
  const sealedBefore = controller.raw.list()[0]!.config;
  controller.sites.update(rows.sites[0]!.id, siteInput({ tls: { cert: pem.cert } }), SYSTEM);
  ok(controller.raw.list()[0]!.config !== sealedBefore, "sealed again with a fresh IV");
  const again = source.read();
  assertEquals(JSON.parse(again.sites[0]!.config).tls.key, pem.key);
  assertEquals(policyVersion(again), version, "the same policy, the same version");

  const target = openedPolicyRepo(createClusterPolicyRepo(node.store.db), node.keys);
  node.store.transaction(() => target.replace(again));
  const stored = node.raw.list()[0]!;
  ok(!PEM_PRIVATE_KEY.test(stored.config), "sealed on the node too");
  ok(stored.config !== controller.raw.list()[0]!.config, "under the node's own key");
  assertEquals(policyVersion(target.read()), policyVersion(again));
  node.policy.rebuild();
  assertEquals(node.policy.current.match("shop.test")?.tls?.key, pem.key);
});
