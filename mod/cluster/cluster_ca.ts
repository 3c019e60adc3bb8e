/**
 * The controller's cluster CA: created once in `<data>/cluster/` (`ca.key` mode 0600), it signs
 * every node's client certificate and the cluster listener's server certificate. Its SHA-256
 * fingerprint travels inside each join token, so a node trusts only the controller it was meant
 * to join.
 */
import type { Random } from "../core/random.ts";
import {
  certificateFacts,
  createCa,
  createServerLeaf,
  type IssuedCertificate,
  type Pem,
} from "../tls/x509.ts";

export interface ClusterCa {
  readonly ca: Pem;
  /** Lower-case hex SHA-256 of the CA certificate (DER): the pin a join token carries. */
  readonly fingerprint: string;
  /** The cluster listener's server certificate (made at every start for `names`). */
  readonly server: Pem;
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

/** Loads or creates the CA; issues the server certificate for `names` (DNS names and IPs). */
export async function loadClusterCa(
  dataDir: string,
  names: readonly string[],
  now: number,
  random: Random,
): Promise<ClusterCa> {
  const dir = `${dataDir}/cluster`;
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const cert = await readOptional(`${dir}/ca.crt`);
  const key = await readOptional(`${dir}/ca.key`);
  let ca: Pem;
  if (cert && key) {
    ca = { cert, key };
  } else {
    ca = await createCa("waf cluster CA", now, random);
    await writePrivate(`${dir}/ca.key`, ca.key);
    await Deno.writeTextFile(`${dir}/ca.crt`, ca.cert, { mode: 0o644 });
  }
  const server = await createServerLeaf(ca, { names, days: 397 }, now, random);
  const facts = await certificateFacts(ca.cert) as IssuedCertificate;
  return { ca, fingerprint: facts.fingerprint, server };
}
