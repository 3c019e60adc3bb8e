/**
 * Site private keys sealed at rest. A site's row keeps its settings as JSON in `config`; its TLS
 * pair is stored there as `tls: { cert, key_sealed }`, the key sealed with AES-256-GCM under
 * `<data-dir>/totp.key` (the key file and envelope of every other sealed secret,
 * `mod/core/secret_box.ts`) and bound to the site id, so a sealed key copied onto another site
 * does not open. Everything above the store (the sites service, the policy compile, the workers'
 * snapshots, the cluster's policy snapshot) sees the opened form `tls: { cert, key }`, which is
 * also how builds before sealing stored it: such a legacy row is still read, and sealed when the
 * data plane starts (`resealLegacy`).
 */
import type { ClusterPolicyRepo } from "../../db/cluster_policy_repo.ts";
import type { SitesRepo } from "../../db/sites_repo.ts";
import type { ObjectSecrets } from "../apisec/apisec_wire.ts";
import type { Logger } from "../core/logger.ts";
import type { Random } from "../core/random.ts";
import { createSyncSecretBox, type SyncSecretBox } from "../core/secret_box.ts";
import type { DeploymentKeys } from "../core/deployment_keys.ts";
import type { StoredSiteRow } from "./site_schema.ts";

/** Additional data binding a sealed key to its site. */
const owner = (siteId: string) => `site.tls.key:${siteId}`;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** Opened keys kept (more sites than this only cost a re-open after the cache is cleared). */
const OPENED_MAX = 20_000;

type StoredTls = { cert: string; key?: string; key_sealed?: string } | null | undefined;

export interface SiteKeys {
  /** The row with its key opened (`tls.key`); an unreadable key leaves the site without TLS. */
  open<R extends StoredSiteRow>(row: R): R;
  /** The row as stored: `tls.key` replaced by `tls.key_sealed`. */
  seal<R extends Pick<StoredSiteRow, "id" | "config">>(row: R): R;
  /** Whether the stored row still holds its key in plain text (written by an older build). */
  isPlain(row: Pick<StoredSiteRow, "config">): boolean;
}

export function createSiteKeys(deps: {
  readonly box: SyncSecretBox;
  /** Told once per sealed value that does not open (another data directory's key, damage). */
  readonly unreadable?: (siteId: string, err: unknown) => void;
}): SiteKeys {
  const reported = new Set<string>();
  // Opened keys: a policy build opens every site's key, and most builds follow a change to
  // something else. The compiled policy holds the same keys in memory anyway. Keyed by site id
  // and value, so a value moved onto another site is opened (and refused) anew.
  const opened = new Map<string, string>();
  const openKey = (sealed: string, siteId: string): string => {
    const id = `${owner(siteId)}\u0000${sealed}`;
    let key = opened.get(id);
    if (key === undefined) {
      key = decoder.decode(deps.box.open(sealed, owner(siteId)));
      if (opened.size >= OPENED_MAX) opened.clear();
      opened.set(id, key);
    }
    return key;
  };
  const tlsOf = (config: string) => (JSON.parse(config) as Record<string, unknown>)["tls"];
  return {
    open(row) {
      const config = JSON.parse(row.config) as Record<string, unknown>;
      const tls = config["tls"] as StoredTls;
      if (!tls || tls.key_sealed === undefined) return row;
      let pair: StoredTls = null;
      try {
        pair = { cert: tls.cert, key: openKey(tls.key_sealed, row.id) };
      } catch (err) {
        if (!reported.has(tls.key_sealed)) {
          reported.add(tls.key_sealed);
          deps.unreadable?.(row.id, err);
        }
      }
      return { ...row, config: JSON.stringify({ ...config, tls: pair }) };
    },
    seal(row) {
      const config = JSON.parse(row.config) as Record<string, unknown>;
      const tls = config["tls"] as StoredTls;
      if (!tls || tls.key === undefined) return row;
      const key_sealed = deps.box.seal(encoder.encode(tls.key), owner(row.id));
      return { ...row, config: JSON.stringify({ ...config, tls: { cert: tls.cert, key_sealed } }) };
    },
    isPlain(row) {
      const tls = tlsOf(row.config) as StoredTls;
      return !!tls && tls.key !== undefined;
    },
  };
}

/**
 * The site rows without their private keys (certificates kept), for data-plane workers that serve
 * no HTTPS port: only the HTTPS listener's certificate callback reads a key, so such a worker need
 * not hold any. Rows without a key are returned as they are.
 */
export function withoutSiteKeys(rows: readonly StoredSiteRow[]): readonly StoredSiteRow[] {
  return rows.map((row) => {
    if (!row.config.includes('"key"')) return row;
    const config = JSON.parse(row.config) as Record<string, unknown>;
    const tls = config["tls"] as StoredTls;
    if (!tls || tls.key === undefined) return row;
    return { ...row, config: JSON.stringify({ ...config, tls: { cert: tls.cert } }) };
  });
}

/**
 * The site keys sealed with the deployment's sealing key (one box: its `totp.key`); failures go
 * to the log.
 */
export function deploymentSiteKeys(keys: DeploymentKeys, random: Random, logger: Logger): SiteKeys {
  return createSiteKeys({
    box: createSyncSecretBox(keys.sealing, random),
    unreadable: (siteId) =>
      logger.error(
        "a site's private key cannot be opened (sealed with another data directory's totp.key, or damaged); the site serves no HTTPS until its certificate is uploaded again",
        { site_id: siteId },
      ),
  });
}

/** The sites repository with keys sealed on write and opened on read. */
export function sealedSitesRepo(raw: SitesRepo, keys: SiteKeys): SitesRepo {
  return {
    list: () => raw.list().map((r) => keys.open(r)),
    get: (id) => {
      const row = raw.get(id);
      return row && keys.open(row);
    },
    getByName: (name) => {
      const row = raw.getByName(name);
      return row && keys.open(row);
    },
    insert: (row) => raw.insert(keys.seal(row)),
    update: (row) => raw.update(keys.seal(row)),
    remove: (id) => raw.remove(id),
  };
}

/**
 * The cluster's policy rows with keys opened: the controller's snapshot carries each site's key
 * in plain text inside the mTLS channel (a node needs it to serve HTTPS and cannot open what the
 * controller's `totp.key` sealed), the version hashes that opened form, and a node seals the keys
 * with its own `totp.key` as it stores the rows. `objects` does the same for the secrets policy
 * objects keep sealed (the API-security shared secret).
 */
export function openedPolicyRepo(
  raw: ClusterPolicyRepo,
  keys: SiteKeys,
  objects: ObjectSecrets = { open: (r) => r, seal: (r) => r },
): ClusterPolicyRepo {
  return {
    read() {
      const rows = raw.read();
      return {
        sites: rows.sites.map((r) => keys.open(r)),
        objects: rows.objects.map((r) => objects.open(r)),
      };
    },
    replace(rows) {
      raw.replace({
        sites: rows.sites.map((r) => keys.seal(r)),
        objects: rows.objects.map((r) => objects.seal(r)),
      });
    },
  };
}

/**
 * Seals the keys an older build stored in plain text (call inside a transaction). `updated_at`
 * is kept: the site did not change, and the cluster's policy version (computed over the opened
 * form) stays the same. Returns how many rows were sealed.
 */
export function resealLegacy(raw: SitesRepo, keys: SiteKeys): number {
  let sealed = 0;
  for (const row of raw.list()) {
    if (!keys.isPlain(row)) continue;
    raw.update(keys.seal(row));
    sealed++;
  }
  return sealed;
}
