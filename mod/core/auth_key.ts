/**
 * The HMAC key that signs CAPTCHA challenges, CAPTCHA receipts and CSRF values. It lives in
 * `<data-dir>/auth.key` (32 random bytes, base64url, mode 0600), created on first start, so
 * signatures survive a restart and never sit in the store or its backups.
 */
import { b64url, fromB64url } from "./digest.ts";
import type { Random } from "./random.ts";

export const AUTH_KEY_FILE = "auth.key";

/** Reads the key, creating it (mode 0600) when absent; tightens a too-open mode. */
export function loadAuthKey(dataDir: string, random: Random): Promise<Uint8Array> {
  return loadKeyFile(`${dataDir}/${AUTH_KEY_FILE}`, random);
}

/**
 * Reads a 32-byte key kept as base64url in `path`, creating it (mode 0600) when absent and
 * tightening a too-open mode. Other data-dir keys (the TOTP encryption key) use it too.
 */
export function loadKeyFile(path: string, random: Random): Promise<Uint8Array> {
  try {
    return Promise.resolve(loadKeyFileSync(path, random));
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * `loadKeyFile` for callers that must stay synchronous (the site private keys are opened while
 * the policy compiles). A few small file operations, once per process and key.
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
