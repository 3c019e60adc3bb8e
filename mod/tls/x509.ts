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

/** A server certificate for `names` (DNS names and IP addresses, told apart here). */
export async function createServerLeaf(
  ca: Pem,
  options: { readonly names: readonly string[]; readonly days: number },
  now: number,
  random: Random,
): Promise<Pem> {
  const { names, days } = options;
  const ips = names.filter((h) => /^[\d.]+$|:/.test(h));
  const dns = names.filter((h) => !ips.includes(h));
  return await createLeaf(
    ca,
    {
      commonName: dns[0] ?? "localhost",
      dnsNames: dns,
      ipAddresses: ips,
      days,
    },
    now,
    random,
  );
}

/** Expiry time (ms) of a PEM certificate. */
export function certificateExpiry(pem: string): number {
  return new x509.X509Certificate(pem).notAfter.getTime();
}

/** A private key (kept by its owner) and a certificate signing request for its public key. */
export interface KeyAndCsr {
  readonly key: string;
  readonly csr: string;
}

/** Generates an ECDSA P-256 key pair and a CSR with subject `CN=<commonName>`. */
export async function createCsr(commonName: string): Promise<KeyAndCsr> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=${commonName}`,
    keys,
    signingAlgorithm: ALG,
  });
  return { key: await keyPem(keys.privateKey), csr: csr.toString("pem") };
}

/** What a parsed, self-signature-verified CSR asks for. */
export interface CsrFacts {
  readonly commonName: string;
  readonly csr: x509.Pkcs10CertificateRequest;
}

/** Parses a PEM CSR and checks its signature (proof of possession); undefined when invalid. */
export async function readCsr(pem: string): Promise<CsrFacts | undefined> {
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(pem);
    if (!await csr.verify()) return undefined;
  } catch {
    return undefined;
  }
  const cn = csr.subjectName.getField("CN");
  return cn.length === 1 ? { commonName: cn[0]!, csr } : undefined;
}

/** A certificate as the cluster records it. */
export interface IssuedCertificate {
  readonly cert: string;
  /** Lower-case hex, no leading zeros beyond what the encoding has. */
  readonly serial: string;
  /** Lower-case hex SHA-256 of the DER encoding. */
  readonly fingerprint: string;
  readonly notAfter: number;
}

/** What a client certificate is signed for: a verified CSR and the identity it gets. */
export interface ClientCertificateOptions {
  readonly csr: CsrFacts;
  readonly commonName: string;
  readonly uri: string;
  readonly days: number;
}

/**
 * Signs a client certificate for a verified CSR's public key: subject `CN=<commonName>`, the
 * SAN URI `uri`, client authentication only. The CSR's own extensions are ignored.
 */
export async function signClientCsr(
  ca: Pem,
  options: ClientCertificateOptions,
  now: number,
  random: Random,
): Promise<IssuedCertificate> {
  const caCert = new x509.X509Certificate(ca.cert);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(random),
    subject: `CN=${options.commonName}`,
    issuer: caCert.subject,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + options.days * DAY),
    publicKey: options.csr.csr.publicKey,
    signingKey: await importKey(ca.key),
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.SubjectAlternativeNameExtension([{ type: "url", value: options.uri }]),
      new x509.ExtendedKeyUsageExtension(["1.3.6.1.5.5.7.3.2"]),
    ],
  });
  return describe(cert);
}

async function describe(cert: x509.X509Certificate): Promise<IssuedCertificate> {
  return {
    cert: cert.toString("pem"),
    serial: cert.serialNumber.toLowerCase(),
    fingerprint: new Uint8Array(await cert.getThumbprint("SHA-256")).toHex(),
    notAfter: cert.notAfter.getTime(),
  };
}

/** Serial, fingerprint and expiry of a PEM or DER certificate; undefined when unreadable. */
export async function certificateFacts(
  cert: string | Uint8Array,
): Promise<IssuedCertificate | undefined> {
  try {
    return await describe(new x509.X509Certificate(cert as string | BufferSource));
  } catch {
    return undefined;
  }
}

/**
 * True when `cert` (PEM or DER) carries a valid signature of `caPem`'s key, names it as its
 * issuer, and is within its validity at `now`.
 */
export async function issuedBy(
  cert: string | Uint8Array,
  caPem: string,
  now: number,
): Promise<boolean> {
  try {
    const leaf = new x509.X509Certificate(cert as string | BufferSource);
    const ca = new x509.X509Certificate(caPem);
    if (leaf.issuer !== ca.subject) return false;
    return await leaf.verify({ publicKey: ca, date: new Date(now) });
  } catch {
    return false;
  }
}

/** The SAN URIs of a PEM certificate. */
export function certificateUris(pem: string): string[] {
  const san = new x509.X509Certificate(pem).getExtension(x509.SubjectAlternativeNameExtension);
  return san ? san.names.items.filter((n) => n.type === "url").map((n) => n.value) : [];
}
