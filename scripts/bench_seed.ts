/** The services a benchmark seeds a store with before the server starts (no server running). */
import { createAuditRepo } from "../db/audit_repo.ts";
import { createPolicyObjectsRepo } from "../db/policy_objects_repo.ts";
import { createSitesRepo } from "../db/sites_repo.ts";
import { type Db, openStore } from "../db/store.ts";
import { createAudit } from "../mod/core/audit.ts";
import { systemClock } from "../mod/core/clock.ts";
import { systemRandom } from "../mod/core/random.ts";
import { createPolicy } from "../mod/data_plane/policy.ts";
import { createSites, type Sites } from "../mod/data_plane/sites.ts";
import { createPolicyObjects, type PolicyObjects } from "../mod/protection/policy_objects.ts";

export interface BenchStore {
  readonly db: Db;
  readonly sites: Sites;
  readonly objects: PolicyObjects;
}

/** Opens `<dataDir>/waf.db` with the sites and policy-object services, runs `fill`, closes. */
export function seedStore(dataDir: string, fill: (store: BenchStore) => void): void {
  const db = openStore(`${dataDir}/waf.db`, { now: systemClock.now() });
  try {
    const audit = createAudit({ repo: createAuditRepo(db), clock: systemClock });
    const sitesRepo = createSitesRepo(db);
    const policy = createPolicy({ listSites: () => sitesRepo.list(), clock: systemClock });
    const sites = createSites({
      db,
      repo: sitesRepo,
      audit,
      policy,
      clock: systemClock,
      random: systemRandom,
    });
    const objects = createPolicyObjects({
      db,
      repo: createPolicyObjectsRepo(db),
      audit,
      clock: systemClock,
      random: systemRandom,
      onChange: () => {},
    });
    fill({ db, sites, objects });
  } finally {
    db.close();
  }
}
