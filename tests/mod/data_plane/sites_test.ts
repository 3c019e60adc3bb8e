import { assertEquals, assertThrows, ok } from "../../_helpers/assert.ts";
import { siteInput, SYSTEM } from "../../_helpers/sites.ts";
import { testStore } from "../../_helpers/store.ts";
import { createAuditRepo } from "../../../db/audit_repo.ts";
import { createSitesRepo } from "../../../db/sites_repo.ts";
import { createAudit } from "../../../mod/core/audit.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { AppError } from "../../../mod/core/errors.ts";
import { createPolicy } from "../../../mod/data_plane/policy.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createSites } from "../../../mod/data_plane/sites.ts";
import { createCa, createLeaf } from "../../../mod/tls/x509.ts";

async function setup() {
  const store = await testStore();
  const clock = new FakeClock();
  const repo = createSitesRepo(store.db);
  const policy = createPolicy({ listSites: () => repo.list(), clock });
  const audit = createAudit({ repo: createAuditRepo(store.db), clock });
  const sites = createSites({ db: store.db, repo, audit, policy, clock, random: systemRandom });
  return { store, sites, policy, audit, clock };
}

function code(fn: () => unknown): { status: number; code: string; field?: unknown } {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) {
      return { status: err.status, code: err.code, field: err.details?.["field"] };
    }
    throw err;
  }
  throw new Error("expected an AppError");
}

Deno.test("creating a site stores it, audits it and applies it to the policy at once", async () => {
  const { store, sites, policy, audit } = await setup();
  await using _ = store;
  assertEquals(policy.current.match("shop.test"), undefined);
  const created = sites.create(siteInput(), SYSTEM);
  ok(/^[0-9a-f]{24}$/.test(created.id));
  assertEquals(created.mode, "block");
  assertEquals(created.level, "balanced");
  assertEquals(sites.list().map((s) => s.id), [created.id]);
  assertEquals(policy.current.match("shop.test")?.id, created.id);
  const records = audit.list({ limit: 10 }).items;
  assertEquals(records[0]?.action, "site.create");
  assertEquals(records[0]?.target, created.id);
});

Deno.test("updating a site swaps the policy and leaves the old one intact", async () => {
  const { store, sites, policy } = await setup();
  await using _ = store;
  const created = sites.create(siteInput(), SYSTEM);
  const before = policy.current;
  sites.update(created.id, siteInput({ hosts: ["*.shop.test"], mode: "monitor" }), SYSTEM);
  const after = policy.current;
  ok(before !== after);
  assertEquals(before.match("shop.test")?.mode, "block");
  assertEquals(after.match("shop.test"), undefined);
  assertEquals(after.match("www.shop.test")?.mode, "monitor");
});

Deno.test("deleting a site removes it from the policy and audits it", async () => {
  const { store, sites, policy, audit } = await setup();
  await using _ = store;
  const created = sites.create(siteInput(), SYSTEM);
  sites.remove(created.id, SYSTEM);
  assertEquals(policy.current.match("shop.test"), undefined);
  assertEquals(audit.list({ limit: 1 }).items[0]?.action, "site.delete");
  assertEquals(code(() => sites.get(created.id)).status, 404);
  assertEquals(code(() => sites.remove(created.id, SYSTEM)).status, 404);
});

Deno.test("a host served by another site is refused with 409 naming the field", async () => {
  const { store, sites } = await setup();
  await using _ = store;
  sites.create(siteInput(), SYSTEM);
  const conflict = code(() =>
    sites.create(siteInput({ name: "other", hosts: ["x.test", "shop.test"] }), SYSTEM)
  );
  assertEquals(conflict, { status: 409, code: "CONFLICT", field: "hosts[1]" });
  assertEquals(code(() => sites.create(siteInput({ hosts: ["y.test"] }), SYSTEM)).field, "name");
  const twice = code(() =>
    sites.create(siteInput({ name: "b", hosts: ["z.test", "z.test"] }), SYSTEM)
  );
  assertEquals(twice, { status: 400, code: "BAD_REQUEST", field: "hosts[1]" });
});

Deno.test("a certificate is stored with its key but the key is never shown or audited", async () => {
  const { store, sites, policy, audit, clock } = await setup();
  await using _ = store;
  const ca = await createCa("test CA", clock.now(), systemRandom);
  const leaf = await createLeaf(
    ca,
    { commonName: "shop.test", dnsNames: ["shop.test"] },
    clock.now(),
    systemRandom,
  );
  const created = sites.create(siteInput({ tls: leaf }), SYSTEM);
  assertEquals(created.tls?.cert, leaf.cert);
  assertEquals(created.tls?.certificate.state, "valid");
  assertEquals(Object.keys(created.tls ?? {}).sort(), ["cert", "certificate"]);
  assertEquals(JSON.stringify(sites.get(created.id)).includes("PRIVATE KEY"), false);
  assertEquals(JSON.stringify(audit.list({ limit: 10 })).includes("PRIVATE KEY"), false);
  assertEquals(policy.current.match("shop.test")?.tls?.key, leaf.key);
  // An update without the key keeps the stored one.
  sites.update(created.id, siteInput({ tls: { cert: leaf.cert }, level: "strict" }), SYSTEM);
  assertEquals(policy.current.match("shop.test")?.tls?.key, leaf.key);
  // A key that does not belong to the certificate is refused.
  const other = await createLeaf(ca, { commonName: "x" }, clock.now(), systemRandom);
  const mismatch = code(() =>
    sites.update(created.id, siteInput({ tls: { cert: leaf.cert, key: other.key } }), SYSTEM)
  );
  assertEquals(mismatch, { status: 400, code: "BAD_REQUEST", field: "tls" });
});

Deno.test("a new site without a key for its certificate is refused", async () => {
  const { store, sites, clock } = await setup();
  await using _ = store;
  const ca = await createCa("test CA", clock.now(), systemRandom);
  const r = code(() => sites.create(siteInput({ tls: { cert: ca.cert } }), SYSTEM));
  assertEquals(r.field, "tls.key");
});

Deno.test("the site schema refuses bad fields by name", () => {
  for (
    const [overrides, field] of [
      [{ hosts: [] }, "hosts"],
      [{ hosts: ["bad host"] }, "hosts.0"],
      [{ hosts: ["*.com"] }, "hosts.0"],
      [{ upstreams: ["ftp://x"] }, "upstreams.0"],
      [{ upstreams: ["http://x/path"] }, "upstreams.0"],
      [{ mode: "loud" }, "mode"],
      [{ level: "max" }, "level"],
      [{ trusted_proxies: ["10.0.0.0/40"] }, "trusted_proxies.0"],
      [{ max_body_bytes: -1 }, "max_body_bytes"],
      [{ extra: 1 }, ""],
    ] as const
  ) {
    assertThrows(() => siteInput(overrides as Record<string, unknown>), (err: Error) => {
      const issues = JSON.parse(err.message) as Array<{ path: unknown[] }>;
      assertEquals(issues[0]!.path.join("."), field, JSON.stringify(overrides));
      return true;
    });
  }
});

Deno.test("host names are stored in lower case without a trailing dot", () => {
  assertEquals(siteInput({ hosts: ["Shop.Test."] }).hosts, ["shop.test"]);
  assertEquals(siteInput({ upstreams: ["http://10.0.0.5:8080/"] }).upstreams, [
    "http://10.0.0.5:8080",
  ]);
});
