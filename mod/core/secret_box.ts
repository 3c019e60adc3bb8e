/**
 * AES-256-GCM (WebCrypto) for secrets that must be read back, such as TOTP secrets. The key is
 * the deployment's sealing key (`mod/core/deployment_keys.ts`): on one box `<data-dir>/totp.key`
 * (32 random bytes, mode 0600), created on first use; in the production profile the key file's,
 * so the store and its backups alone never reveal a secret. Each value is bound to its owner through the
 * additional data: a ciphertext copied onto another account does not open.
 */
import { createCipheriv, createDecipheriv } from "node:crypto";
import { keyBytes, keyBytesAsync, type KeyRef } from "./deployment_keys.ts";
import { b64url, fromB64url } from "./digest.ts";
import type { Random } from "./random.ts";

export { SEALING_KEY_FILE as TOTP_KEY_FILE } from "./deployment_keys.ts";
const VERSION = "v1";
const IV_BYTES = 12;
const encoder = new TextEncoder();

export interface SecretBox {
  /** `v1.<iv>.<ciphertext+tag>` (base64url) of `plain`, bound to `owner`. */
  seal(plain: Uint8Array, owner: string): Promise<string>;
  /** The plain bytes; throws when the value was altered, bound elsewhere or sealed under another key. */
  open(sealed: string, owner: string): Promise<Uint8Array>;
}

/** A key file's path (read on first use) or a key reference. */
export type SealingKey = string | KeyRef;

const refOf = (key: SealingKey): KeyRef => typeof key === "string" ? { file: key } : key;

export function createSecretBox(sealing: SealingKey, random: Random): SecretBox {
  const ref = refOf(sealing);
  let key: Promise<CryptoKey> | undefined;
  const cryptoKey = () =>
    key ??= keyBytesAsync(ref, random).then((raw) =>
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

/** `SecretBox` for callers that cannot await (the policy compile opens site private keys). */
export interface SyncSecretBox {
  seal(plain: Uint8Array, owner: string): string;
  open(sealed: string, owner: string): Uint8Array;
}

const TAG_BYTES = 16;

/**
 * The same envelope, key file and additional data as `createSecretBox` (each opens what the other
 * sealed: WebCrypto's AES-GCM output is the ciphertext followed by the 16-byte tag), computed with
 * node:crypto synchronously. The key file is read on first use.
 */
export function createSyncSecretBox(sealing: SealingKey, random: Random): SyncSecretBox {
  const ref = refOf(sealing);
  let key: Uint8Array | undefined;
  const rawKey = () => key ??= keyBytes(ref, random).subarray(0, 32);
  return {
    seal(plain, owner) {
      const iv = new Uint8Array(random.bytes(IV_BYTES));
      const cipher = createCipheriv("aes-256-gcm", rawKey(), iv);
      cipher.setAAD(encoder.encode(owner));
      const body = cipher.update(plain);
      const rest = cipher.final();
      const out = new Uint8Array(body.length + rest.length + TAG_BYTES);
      out.set(body);
      out.set(rest, body.length);
      out.set(cipher.getAuthTag(), body.length + rest.length);
      return [VERSION, b64url(iv), b64url(out)].join(".");
    },
    open(sealed, owner) {
      const [version, iv, data] = sealed.split(".");
      if (version !== VERSION || !iv || !data) {
        throw new Error("Not a sealed value: expected v1.<iv>.<data>");
      }
      const bytes = unb64(data);
      if (bytes.length < TAG_BYTES) throw new Error("The sealed value is damaged");
      const decipher = createDecipheriv("aes-256-gcm", rawKey(), unb64(iv));
      decipher.setAAD(encoder.encode(owner));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      const body = decipher.update(bytes.subarray(0, bytes.length - TAG_BYTES));
      const rest = decipher.final();
      const out = new Uint8Array(body.length + rest.length);
      out.set(body);
      out.set(rest, body.length);
      return out;
    },
  };
}

/** Damaged base64url decodes to no bytes, which AES-GCM then refuses like a wrong tag. */
const unb64 = (text: string): Uint8Array<ArrayBuffer> =>
  (fromB64url(text) ?? new Uint8Array(0)) as Uint8Array<ArrayBuffer>;
