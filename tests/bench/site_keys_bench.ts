/**
 * What sealed site private keys cost a policy build: 200 sites with a certificate each, compiled
 * from the plain repository (the baseline) and from the sealed one (every key opened, AES-GCM),
 * in the same run; the ratio is the number to compare.
 *
 * ```sh
 * deno bench -A tests/bench/site_keys_bench.ts
 * ```
 */
import { createSitesRepo } from "../../db/sites_repo.ts";
import { openStore } from "../../db/store.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createSyncSecretBox, TOTP_KEY_FILE } from "../../mod/core/secret_box.ts";
import { createPolicy } from "../../mod/data_plane/policy.ts";
import { createSiteKeys, sealedSitesRepo } from "../../mod/data_plane/site_keys.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";

const SITES = 200;
const now = Date.now();
const ca = await createCa("bench CA", now, systemRandom);
const pem = await createLeaf(
  ca,
  { commonName: "a.bench", dnsNames: ["a.bench"] },
  now,
  systemRandom,
);

const keysOf = (dir: string) =>
  createSiteKeys({ box: createSyncSecretBox(`${dir}/${TOTP_KEY_FILE}`, systemRandom) });

function store(dir: string, sealed: boolean) {
  const db = openStore(`${dir}/waf.db`, { now });
  const raw = createSitesRepo(db);
  const repo = sealed ? sealedSitesRepo(raw, keysOf(dir)) : raw;
  for (let i = 0; i < SITES; i++) {
    repo.insert({
      id: `site${i}`,
      name: `s${i}`,
      config: JSON.stringify({
        hosts: [`s${i}.bench`],
        upstreams: ["http://127.0.0.1:9"],
        tls: pem,
      }),
      created_at: now,
      updated_at: now,
    });
  }
  return {
    raw,
    policy: createPolicy({ listSites: () => repo.list(), clock: new FakeClock(now) }),
  };
}

const plainDir = await Deno.makeTempDir({ prefix: "waf-bench-keys-" });
const sealedDir = await Deno.makeTempDir({ prefix: "waf-bench-keys-" });
const plain = store(plainDir, false);
const sealed = store(sealedDir, true);

Deno.bench(`policy build, ${SITES} TLS sites, keys in plain text`, {
  group: "build",
  baseline: true,
}, () => {
  plain.policy.rebuild();
});

Deno.bench(
  `policy build, ${SITES} TLS sites, keys sealed`,
  { group: "build" },
  () => {
    sealed.policy.rebuild();
  },
);

Deno.bench(
  `first policy build, ${SITES} TLS sites, keys sealed (every key opened)`,
  { group: "build" },
  () => {
    const repo = sealedSitesRepo(sealed.raw, keysOf(sealedDir));
    createPolicy({ listSites: () => repo.list(), clock: new FakeClock(now) });
  },
);

globalThis.addEventListener("unload", () => {
  Deno.removeSync(plainDir, { recursive: true });
  Deno.removeSync(sealedDir, { recursive: true });
});
