import { assertEquals } from "../_helpers/assert.ts";
import { testStore } from "../_helpers/store.ts";
import { createPolicyObjectsRepo } from "../../db/policy_objects_repo.ts";
import { createSitesRepo } from "../../db/sites_repo.ts";

Deno.test("nextPosition() follows the highest position of the kind, global or scoped to any site", async () => {
  await using s = await testStore();
  const repo = createPolicyObjectsRepo(s.db);
  const sites = createSitesRepo(s.db);
  for (const id of ["a", "b"]) {
    sites.insert({ id, name: id, config: "{}", created_at: 1, updated_at: 1 });
  }
  const put = (id: string, kind: string, site: string | null, position: number) =>
    repo.insert({ id, kind, site_id: site, position, config: "{}", created_at: 1, updated_at: 1 });
  assertEquals(repo.nextPosition("acl_rule"), 10, "an empty kind starts at 10");
  put("g1", "acl_rule", null, 30);
  assertEquals(repo.nextPosition("acl_rule"), 40);
  put("s1", "acl_rule", "b", 70);
  assertEquals(repo.nextPosition("acl_rule"), 80, "a site's rule counts");
  put("g2", "acl_rule", null, 90);
  put("x", "ip_entry", "a", 500);
  assertEquals(repo.nextPosition("acl_rule"), 100, "another kind does not");
  assertEquals(repo.nextPosition("ip_entry"), 510);
  s.db.exec("DELETE FROM sites WHERE id = 'a'");
  assertEquals(repo.nextPosition("ip_entry"), 10, "its site's entries went with the site");
});
