/**
 * The data directory's key files: 32 random bytes, base64url, mode 0600, created on first use, so
 * signatures and sealed secrets survive a restart and never sit in the store or its backups.
 * `<data-dir>/auth.key` signs CAPTCHA challenges, receipts and CSRF values; `<data-dir>/totp.key`
 * seals secrets at rest (see `deployment_keys.ts`, which the rest of the code goes through).
 */
import { b64url, fromB64url } from "./digest.ts";
import type { Random } from "./random.ts";

/**
 * Reads a 32-byte key kept as base64url in `path`, creating it (mode 0600) when absent and
 * tightening a too-open mode. Synchronous for callers that cannot await (the site private keys
 * are opened while the policy compiles): a few small file operations, once per process and key.
 */
export function loadKeyFileSync(path: string, random: Random): Uint8Array {
  try {
    Deno.writeTextFileSync(path, b64url(random.bytes(32)) + "\n", { mode: 0o600, createNew: true });
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  }
  const info = Deno.statSync(path);
  if (info.mode !== null && (info.mode & 0o077) !== 0) Deno.chmodSync(path, 0o600);
  const key = fromB64url(Deno.readTextFileSync(path).trim());
  if (key === undefined || key.length < 32) {
    throw new Error(
      `The key file "${path}" is damaged: expected 32 bytes, delete it to regenerate`,
    );
  }
  return key;
}
