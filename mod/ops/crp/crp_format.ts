/**
 * The content-package (CRP) format shared by the verifier and the build tool: a ustar archive
 * holding `manifest.json` (every other file with its SHA-256 and size), `manifest.sig` (base64
 * Ed25519 signature over the exact manifest bytes) and the listed files. Keys are Ed25519
 * public keys, base64 of the 32 raw bytes (optionally prefixed `ed25519:`) or SPKI PEM.
 */
import { z } from "zod";

export const MANIFEST = "manifest.json";
export const SIGNATURE = "manifest.sig";
export const FORMAT = "waf-crp/1";

export interface CrpLimits {
  /** Bytes of the whole package file. */
  readonly maxPackageBytes: number;
  /** Tar entries (files and directories). */
  readonly maxFiles: number;
  readonly maxManifestBytes: number;
}

export const DEFAULT_LIMITS: CrpLimits = {
  maxPackageBytes: 64 * 1024 * 1024,
  maxFiles: 1000,
  maxManifestBytes: 1024 * 1024,
};

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const MAX_PATH = 255;

export type PathProblem = "absolute" | "dot_dot" | "backslash" | "empty" | "characters" | "long";

/** Why a package path is unsafe, or undefined for a safe relative path. */
export function pathProblem(path: string): PathProblem | undefined {
  if (path === "") return "empty";
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path)) return "absolute";
  if (path.includes("\\")) return "backslash";
  const segments = path.split("/");
  if (segments.includes("..")) return "dot_dot";
  if (path.length > MAX_PATH) return "long";
  if (segments.some((s) => s === "" || s === ".")) return "empty";
  return segments.every((s) => SEGMENT.test(s)) ? undefined : "characters";
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export const manifestSchema = z.strictObject({
  format: z.literal(FORMAT),
  name: z.string().regex(NAME, "expected a package name of ASCII letters, digits, '.', '_', '-'"),
  version: z.string().regex(NAME, "expected a version of ASCII letters, digits, '.', '_', '-'"),
  created_at: z.string().datetime(),
  files: z.array(z.strictObject({
    path: z.string().min(1).max(MAX_PATH),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, "expected 64 lower-case hex digits"),
    size: z.number().int().min(0),
  })),
});

export type Manifest = z.infer<typeof manifestSchema>;

export async function sha256Hex(data: Uint8Array): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data as BufferSource)).toHex();
}

function base64Bytes(text: string): Uint8Array | undefined {
  try {
    return Uint8Array.fromBase64(text);
  } catch {
    return undefined;
  }
}

const PEM = /^-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----\s*$/;

/** Imports a configured Ed25519 public key; undefined when it is not one. */
export async function importPublicKey(text: string): Promise<CryptoKey | undefined> {
  const trimmed = text.trim();
  const pem = PEM.exec(trimmed);
  try {
    if (pem) {
      const der = base64Bytes(pem[1]!.replace(/\s+/g, ""));
      if (!der) return undefined;
      return await crypto.subtle.importKey("spki", der as BufferSource, "Ed25519", true, [
        "verify",
      ]);
    }
    const raw = base64Bytes(trimmed.replace(/^ed25519:/, ""));
    if (!raw || raw.length !== 32) return undefined;
    return await crypto.subtle.importKey("raw", raw as BufferSource, "Ed25519", true, [
      "verify",
    ]);
  } catch {
    return undefined;
  }
}

/** Decodes the text of `manifest.sig`: base64 of a 64-byte signature. */
export function decodeSignature(bytes: Uint8Array): Uint8Array | undefined {
  const text = new TextDecoder().decode(bytes).trim();
  const sig = base64Bytes(text);
  return sig && sig.length === 64 ? sig : undefined;
}

/** A short fingerprint for printing which key matched: first 16 hex of SHA-256(raw key). */
export async function keyFingerprint(key: CryptoKey): Promise<string> {
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", key));
  return (await sha256Hex(raw)).slice(0, 16);
}
