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
export async function loadKeyFile(path: string, random: Random): Promise<Uint8Array> {
  try {
    await Deno.writeTextFile(path, b64url(random.bytes(32)) + "\n", {
      mode: 0o600,
      createNew: true,
    });
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  }
  const info = await Deno.stat(path);
  if (info.mode !== null && (info.mode & 0o077) !== 0) await Deno.chmod(path, 0o600);
  const key = fromB64url((await Deno.readTextFile(path)).trim());
  if (key === undefined || key.length < 32) {
    throw new Error(
      `The key file "${path}" is damaged: expected 32 bytes, delete it to regenerate`,
    );
  }
  return key;
}
