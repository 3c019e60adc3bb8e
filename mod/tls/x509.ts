/**
 * The one wrapper around `@peculiar/x509`: generates a local CA and certificates signed by it
 * (ECDSA P-256, X.509 v3), as PEM. Used for `tls: auto` and for tests that need a local CA.
 */
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import type { Random } from "../core/random.ts";

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DAY = 86_400_000;

export interface Pem {
  readonly cert: string;
  readonly key: string;
}

async function keyPem(key: CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", key), "PRIVATE KEY");
}

async function importKey(pem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decode(pem)[0];
  if (!der) throw new Error("Private key PEM is empty");
  return await crypto.subtle.importKey("pkcs8", der, ALG, true, ["sign"]);
}

function serial(random: Random): string {
  const bytes = random.bytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toHex();
}

/** A self-signed certificate authority. */
export async function createCa(commonName: string, now: number, random: Random): Promise<Pem> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(random),
    name: `CN=${commonName}`,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 3650 * DAY),
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
    ],
  });
  return { cert: cert.toString("pem"), key: await keyPem(keys.privateKey) };
}

export interface LeafOptions {
  readonly commonName: string;
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  readonly days?: number;
  /** Server (default) or client authentication. */
  readonly usage?: "server" | "client";
}

/** A certificate for a server or client, signed by `ca`. */
export async function createLeaf(
  ca: Pem,
  options: LeafOptions,
  now: number,
  random: Random,
): Promise<Pem> {
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await importKey(ca.key);
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]);
  const names: x509.JsonGeneralName[] = [
    ...(options.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(random),
    subject: `CN=${options.commonName}`,
    issuer: caCert.subject,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + (options.days ?? 365) * DAY),
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.SubjectAlternativeNameExtension(names),
      new x509.ExtendedKeyUsageExtension([
        options.usage === "client" ? "1.3.6.1.5.5.7.3.2" : "1.3.6.1.5.5.7.3.1",
      ]),
    ],
  });
  return { cert: cert.toString("pem"), key: await keyPem(keys.privateKey) };
}

/** Expiry time (ms) of a PEM certificate. */
export function certificateExpiry(pem: string): number {
  return new x509.X509Certificate(pem).notAfter.getTime();
}
