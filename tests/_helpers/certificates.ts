/** A throwaway CA and a server certificate it signed, for tests that serve or trust TLS. */
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf, type Pem } from "../../mod/tls/x509.ts";

/** A new test CA and a certificate for `names` (IP literals become IP addresses) signed by it. */
export async function testCertificate(
  ...names: string[]
): Promise<{ readonly ca: Pem; readonly leaf: Pem }> {
  const now = Date.now();
  const ca = await createCa("waf test CA", now, systemRandom);
  const ip = (n: string) => /^[\d.]+$/.test(n) || n.includes(":");
  const leaf = await createLeaf(
    ca,
    {
      commonName: names[0] ?? "localhost",
      dnsNames: names.filter((n) => !ip(n)),
      ipAddresses: names.filter(ip),
    },
    now,
    systemRandom,
  );
  return { ca, leaf };
}
