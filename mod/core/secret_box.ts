/**
 * AES-256-GCM (WebCrypto) for secrets that must be read back, such as TOTP secrets. The key is
 * `<data-dir>/totp.key` (32 random bytes, mode 0600), created on first use, so the store and
 * its backups alone never reveal a secret. Each value is bound to its owner through the
 * additional data: a ciphertext copied onto another account does not open.
 */
import { loadKeyFile } from "./auth_key.ts";
import { b64url, fromB64url } from "./digest.ts";
import type { Random } from "./random.ts";

export const TOTP_KEY_FILE = "totp.key";
const VERSION = "v1";
const IV_BYTES = 12;
const encoder = new TextEncoder();

export interface SecretBox {
  /** `v1.<iv>.<ciphertext+tag>` (base64url) of `plain`, bound to `owner`. */
  seal(plain: Uint8Array, owner: string): Promise<string>;
  /** The plain bytes; throws when the value was altered, bound elsewhere or sealed under another key. */
  open(sealed: string, owner: string): Promise<Uint8Array>;
}

export function createSecretBox(keyPath: string, random: Random): SecretBox {
  let key: Promise<CryptoKey> | undefined;
  const cryptoKey = () =>
    key ??= loadKeyFile(keyPath, random).then((raw) =>
      crypto.subtle.importKey("raw", new Uint8Array(raw), "AES-GCM", false, ["encrypt", "decrypt"])
    ).catch((err) => {
      key = undefined;
      throw err;
    });

  return {
    async seal(plain, owner) {
      const iv = new Uint8Array(random.bytes(IV_BYTES));
      const sealed = await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: encoder.encode(owner) },
        await cryptoKey(),
        new Uint8Array(plain),
      );
      return [VERSION, b64url(iv), b64url(new Uint8Array(sealed))].join(".");
    },
    async open(sealed, owner) {
      const [version, iv, data] = sealed.split(".");
      if (version !== VERSION || !iv || !data) {
        throw new Error("Not a sealed value: expected v1.<iv>.<data>");
      }
      const plain = await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: unb64(iv), additionalData: encoder.encode(owner) },
        await cryptoKey(),
        unb64(data),
      );
      return new Uint8Array(plain);
    },
  };
}

/** Damaged base64url decodes to no bytes, which AES-GCM then refuses like a wrong tag. */
const unb64 = (text: string): Uint8Array<ArrayBuffer> =>
  (fromB64url(text) ?? new Uint8Array(0)) as Uint8Array<ArrayBuffer>;
