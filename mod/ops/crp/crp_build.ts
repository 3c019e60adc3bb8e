/**
 * Builds and signs content packages (used by `scripts/crp_build.ts` and by tests): writes the
 * manifest with every file's SHA-256 and size, signs the exact manifest bytes with Ed25519 and
 * packs everything into a ustar archive.
 */
import {
  FORMAT,
  MANIFEST,
  type Manifest,
  pathProblem,
  sha256Hex,
  SIGNATURE,
} from "./crp_format.ts";
import { writeTar } from "../tar.ts";

export interface PackageFile {
  readonly path: string;
  readonly data: Uint8Array;
}

export interface PackageSpec {
  readonly name: string;
  readonly version: string;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly files: readonly PackageFile[];
}

const encoder = new TextEncoder();

function pem(label: string, der: Uint8Array): string {
  const body = der.toBase64().replace(/.{1,64}/g, "$&\n");
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

/** A new Ed25519 key pair: the private key as PKCS#8 PEM, the public key as base64 raw. */
export async function generateSigningKey(): Promise<{ privatePem: string; publicKey: string }> {
  const pair = await crypto.subtle.generateKey("Ed25519", true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  return { privatePem: pem("PRIVATE KEY", pkcs8), publicKey: raw.toBase64() };
}

/** Imports a PKCS#8 PEM Ed25519 private key for signing. */
export async function importSigningKey(privatePem: string): Promise<CryptoKey> {
  const m = /-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\s]+)-----END PRIVATE KEY-----/.exec(
    privatePem,
  );
  if (!m) throw new Error("Expected a PKCS#8 PEM private key (BEGIN PRIVATE KEY)");
  const der = Uint8Array.fromBase64(m[1]!);
  return await crypto.subtle.importKey("pkcs8", der as BufferSource, "Ed25519", false, ["sign"]);
}

/** The manifest bytes for `spec` (files sorted by path, so builds are reproducible). */
export async function manifestFor(spec: PackageSpec): Promise<Uint8Array> {
  const files: Manifest["files"] = [];
  for (const file of [...spec.files].sort((a, b) => a.path < b.path ? -1 : 1)) {
    const problem = pathProblem(file.path);
    if (problem) throw new Error(`Unsafe package path "${file.path}": ${problem}`);
    if (file.path === MANIFEST || file.path === SIGNATURE) {
      throw new Error(`"${file.path}" is reserved`);
    }
    files.push({ path: file.path, sha256: await sha256Hex(file.data), size: file.data.length });
  }
  const manifest: Manifest = {
    format: FORMAT,
    name: spec.name,
    version: spec.version,
    created_at: new Date(spec.createdAt).toISOString(),
    files,
  };
  return encoder.encode(JSON.stringify(manifest, null, 2) + "\n");
}

/** Signs `manifest` and returns the text of `manifest.sig`. */
export async function signManifest(manifest: Uint8Array, key: CryptoKey): Promise<Uint8Array> {
  const sig = new Uint8Array(await crypto.subtle.sign("Ed25519", key, manifest as BufferSource));
  return encoder.encode(sig.toBase64() + "\n");
}

/** A complete signed package as tar bytes. */
export async function buildPackage(spec: PackageSpec, key: CryptoKey): Promise<Uint8Array> {
  const manifest = await manifestFor(spec);
  const sig = await signManifest(manifest, key);
  const mtime = Math.floor(spec.createdAt / 1000);
  return writeTar([
    { name: MANIFEST, data: manifest, mtime },
    { name: SIGNATURE, data: sig, mtime },
    ...[...spec.files].sort((a, b) => a.path < b.path ? -1 : 1).map((f) => ({
      name: f.path,
      data: f.data,
      mtime,
    })),
  ]);
}
