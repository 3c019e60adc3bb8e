/**
 * The deployment's cluster CA: kept in the management store (settings row `cluster.ca`: the
 * certificate in clear, the private key sealed with the deployment's sealing key), so every
 * controller of a deployment signs and trusts with the same CA and a node enrolled through one
 * controller is accepted by the others. It is created once, insert-if-absent in a transaction:
 * two controllers starting together agree on whichever committed first. A CA that an earlier
 * version kept in `<data>/cluster/ca.{crt,key}` is adopted the first time (a single box keeps its
 * nodes), and from then on only the store's is read. Each controller still issues its own
 * cluster listener certificate, for its own names, at every start. The CA's SHA-256 fingerprint
 * travels inside each join token, so a node trusts only the deployment it was meant to join.
 */
import type { SettingsRepo } from "../../db/settings_repo.ts";
import { AppError } from "../core/errors.ts";
import type { Random } from "../core/random.ts";
import type { SecretBox } from "../core/secret_box.ts";
import {
  certificateFacts,
  createCa,
  createServerLeaf,
  type IssuedCertificate,
  type Pem,
} from "../tls/x509.ts";

/** The settings row holding the deployment's cluster CA; also the sealed key's owner. */
export const CLUSTER_CA_SETTING = "cluster.ca";

export interface ClusterCa {
  readonly ca: Pem;
  /** Lower-case hex SHA-256 of the CA certificate (DER): the pin a join token carries. */
  readonly fingerprint: string;
  /** The cluster listener's server certificate (made at every start for `names`). */
  readonly server: Pem;
  /**
   * Where the CA came from at this start: the store, the data directory (adopted now), or made
   * now. `staleFile`: the data directory holds a different CA, which is no longer used.
   */
  readonly origin: "store" | "adopted" | "created";
  readonly staleFile: boolean;
}

/** The stored row: the certificate in clear, the private key sealed. */
interface StoredCa {
  readonly cert: string;
  readonly key_sealed: string;
  readonly created_at: number;
}

export interface ClusterCaDeps {
  readonly settings: SettingsRepo;
  readonly transaction: <T>(fn: () => T) => T;
  /** Seals the CA's private key with the deployment's sealing key. */
  readonly box: SecretBox;
  /** Where an earlier version kept the CA (`<data>/cluster/ca.{crt,key}`). */
  readonly dataDir: string;
  readonly random: Random;
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

/** Writes `text` to `path` readable by the owner only. */
export async function writePrivate(path: string, text: string): Promise<void> {
  await Deno.writeTextFile(path, text, { mode: 0o600 });
  await Deno.chmod(path, 0o600);
}

/** The CA an earlier version kept on disk (a node's directory has `ca.crt` but no key). */
async function fileCa(dataDir: string): Promise<Pem | undefined> {
  const cert = await readOptional(`${dataDir}/cluster/ca.crt`);
  const key = await readOptional(`${dataDir}/cluster/ca.key`);
  return cert && key ? { cert, key } : undefined;
}

async function openKey(deps: ClusterCaDeps, stored: StoredCa): Promise<string> {
  try {
    return new TextDecoder().decode(await deps.box.open(stored.key_sealed, CLUSTER_CA_SETTING));
  } catch (err) {
    throw new AppError(
      500,
      "CLUSTER_CA_KEY_UNREADABLE",
      "The cluster CA's private key in the store cannot be opened: this controller's sealing key is not the deployment's (storage.production.secrets_file, or the data directory's totp.key)",
      { cause: err },
    );
  }
}

/**
 * The deployment's CA (created or adopted into the store when it holds none) and a server
 * certificate for `names` (DNS names and IPs) issued from it.
 */
export async function loadClusterCa(
  deps: ClusterCaDeps,
  names: readonly string[],
  now: number,
): Promise<ClusterCa> {
  const onDisk = await fileCa(deps.dataDir);
  let origin: ClusterCa["origin"] = "store";
  let stored = deps.settings.get(CLUSTER_CA_SETTING) as StoredCa | undefined;
  if (!stored) {
    const candidate = onDisk ?? await createCa("waf cluster CA", now, deps.random);
    const row: StoredCa = {
      cert: candidate.cert,
      key_sealed: await deps.box.seal(new TextEncoder().encode(candidate.key), CLUSTER_CA_SETTING),
      created_at: now,
    };
    // Another controller may have stored its CA since the read: the first one stays.
    const inserted = deps.transaction(() =>
      deps.settings.setIfAbsent(CLUSTER_CA_SETTING, row, now)
    );
    if (inserted) origin = onDisk ? "adopted" : "created";
    stored = deps.settings.get(CLUSTER_CA_SETTING) as StoredCa;
  }
  const ca: Pem = { cert: stored.cert, key: await openKey(deps, stored) };
  const server = await createServerLeaf(ca, { names, days: 397 }, now, deps.random);
  const facts = await certificateFacts(ca.cert) as IssuedCertificate;
  return {
    ca,
    fingerprint: facts.fingerprint,
    server,
    origin,
    staleFile: onDisk !== undefined && onDisk.cert.trim() !== ca.cert.trim(),
  };
}
