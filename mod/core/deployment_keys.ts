/**
 * The deployment's two keys as every consumer takes them, resolved once at start-up
 * (`mod/deployment/keys.ts`): on one box (`temporary` profile) the data directory's key files,
 * read and created on first use as they always were; in the `production` profile the keys of
 * `storage.production.secrets_file`, the same on every controller, so what one controller sealed
 * or signed opens on the others. Plain data, so a data-plane worker receives it in its init.
 */
import { loadKeyFileSync } from "./auth_key.ts";
import type { Random } from "./random.ts";

/** A key file read (and created, mode 0600) on first use, or the key itself. */
export type KeyRef = { readonly file: string } | { readonly key: Uint8Array };

export interface DeploymentKeys {
  /**
   * Seals secrets at rest (TOTP secrets, site private keys, channel and AI credentials) and
   * derives the recovery-code key: `<data-dir>/totp.key` on one box.
   */
  readonly sealing: KeyRef;
  /** Signs CAPTCHA challenges, receipts and CSRF values: `<data-dir>/auth.key` on one box. */
  readonly signing: KeyRef;
}

export const SEALING_KEY_FILE = "totp.key";
export const SIGNING_KEY_FILE = "auth.key";

/** The data directory's key files: what one box has always used. */
export function dataDirKeys(dataDir: string): DeploymentKeys {
  return {
    sealing: { file: `${dataDir}/${SEALING_KEY_FILE}` },
    signing: { file: `${dataDir}/${SIGNING_KEY_FILE}` },
  };
}

/** The key's bytes: a file is read (created when absent) now, a few small file operations. */
export function keyBytes(ref: KeyRef, random: Random): Uint8Array {
  return "key" in ref ? ref.key : loadKeyFileSync(ref.file, random);
}

/** `keyBytes` as a promise, for callers that await (a failure rejects, never throws). */
export function keyBytesAsync(ref: KeyRef, random: Random): Promise<Uint8Array> {
  try {
    return Promise.resolve(keyBytes(ref, random));
  } catch (err) {
    return Promise.reject(err);
  }
}
