import { assertEquals } from "../_helpers/assert.ts";
import { testEngine, testStore } from "../_helpers/store.ts";
import { createPolicyChangeLog } from "../../db/policy_object_changes.ts";
import { createPolicyObjectsRepo, type PolicyObjectRow } from "../../db/policy_objects_repo.ts";
import { createSitesRepo } from "../../db/sites_repo.ts";
import { createClusterPolicyRepo } from "../../db/cluster_policy_repo.ts";
import { schemaVersion } from "../../db/store.ts";
import { SCHEMA_VERSION } from "../../db/migrations.ts";

const row = (id: string, kind: string, site: string | null = null): PolicyObjectRow => ({
  id,
  kind,
  site_id: site,
  position: 0,
  config: "{}",
  created_at: 1,
  updated_at: 1,
});

Deno.test("the change log names the ids of its kind inserted, updated and deleted, once each", async () => {
  await using s = await testStore();
  const repo = createPolicyObjectsRepo(s.db);
  const log = createPolicyChangeLog(s.db, "ip_entry");
  assertEquals(log.take(10), []);
  repo.insert(row("a", "ip_entry"));
  repo.insert(row("b", "ip_entry"));
  repo.insert(row("r", "acl_rule"));
  repo.update({ ...row("a", "ip_entry"), config: '{"x":1}' });
  repo.update({ ...row("r", "acl_rule"), config: '{"x":1}' });
  repo.remove("ip_entry", "b");
  assertEquals([...log.take(10)].sort(), ["a", "b"]);
  assertEquals(log.take(10), [], "taken: the log starts empty again");
});

Deno.test("the change log sees entries deleted with their site, and forgets a rolled-back change", async () => {
  await using s = await testStore();
  const repo = createPolicyObjectsRepo(s.db);
  createSitesRepo(s.db).insert({
    id: "site1",
    name: "shop",
    config: "{}",
    created_at: 1,
    updated_at: 1,
  });
  repo.insert(row("scoped", "ip_entry", "site1"));
  repo.insert(row("global", "ip_entry"));
  const log = createPolicyChangeLog(s.db, "ip_entry");
  s.db.exec("DELETE FROM sites WHERE id = 'site1'");
  assertEquals(repo.get("ip_entry", "scoped"), undefined, "the foreign key cascaded");
  assertEquals(log.take(10), ["scoped"]);
  try {
    s.transaction(() => {
      repo.remove("ip_entry", "global");
      throw new Error("rolled back");
    });
  } catch {
    // The write failed as intended.
  }
  assertEquals(log.take(10), []);
  assertEquals(repo.get("ip_entry", "global")?.id, "global");
});

Deno.test("past the limit the change log answers many; two logs of one kind each see every change", async () => {
  await using s = await testStore();
  const repo = createPolicyObjectsRepo(s.db);
  const first = createPolicyChangeLog(s.db, "ip_entry");
  const second = createPolicyChangeLog(s.db, "ip_entry");
  for (let i = 0; i < 5; i++) repo.insert(row(`e${i}`, "ip_entry"));
  assertEquals(first.take(4), "many");
  assertEquals(first.take(4), [], "emptied all the same");
  assertEquals(second.take(5).length, 5);
  // Temporary objects only: the store's schema is what it was (PostgreSQL's log is a table the
  // store opens with, outside the migrations).
  assertEquals(schemaVersion(s.db), SCHEMA_VERSION);
  if (testEngine() === "postgresql") return;
  const objects = s.db.prepare("SELECT COUNT(*) AS n FROM main.sqlite_master WHERE name LIKE ?")
    .get("policy_changes%") as { n: number };
  assertEquals(objects.n, 0);
});

Deno.test("ids taken inside a transaction are named again by the next take outside one (it may have rolled back)", async () => {
  await using s = await testStore();
  const repo = createPolicyObjectsRepo(s.db);
  const log = createPolicyChangeLog(s.db, "ip_entry");
  try {
    s.transaction(() => {
      repo.insert(row("phantom", "ip_entry"));
      assertEquals(log.take(10), ["phantom"]);
      throw new Error("rolled back");
    });
  } catch {
    // The write failed as intended.
  }
  assertEquals(log.take(10), ["phantom"], "read again: it is not stored");
  assertEquals(log.take(10), [], "once");
  s.transaction(() => {
    for (let i = 0; i < 5; i++) repo.insert(row(`e${i}`, "ip_entry"));
    assertEquals(log.take(4), "many");
  });
  assertEquals(log.take(4), "many", "a full read inside a transaction is redone after it");
  assertEquals(log.take(4), []);
});

Deno.test("a cluster policy replaced wholesale (a DELETE with no WHERE) logs every entry it removes", async () => {
  await using s = await testStore();
  const repo = createPolicyObjectsRepo(s.db);
  for (const id of ["a", "b", "c"]) repo.insert(row(id, "ip_entry"));
  const log = createPolicyChangeLog(s.db, "ip_entry");
  // SQLite empties a table without visiting its rows unless a trigger watches it.
  s.transaction(() =>
    createClusterPolicyRepo(s.db).replace({ sites: [], objects: [row("b", "ip_entry")] })
  );
  assertEquals([...log.take(10)].sort(), ["a", "b", "c"]);
});
