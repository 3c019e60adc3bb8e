/**
 * Synchronous digests for secrets that are compared, never reversed: SHA-256 of session ids
 * and setup tokens, HMAC signatures of CAPTCHA challenges, receipts and CSRF values.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/** Lower-case hex SHA-256 of `text`. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Base64url HMAC-SHA256 of `text` under `key`. */
export function hmac(key: Uint8Array, text: string): string {
  return createHmac("sha256", key).update(text, "utf8").digest("base64url");
}

/** HMAC-SHA256 of `text` under `key`, in `encoding` (the signatures of notification channels). */
export function hmacSha256(
  key: string | Uint8Array,
  text: string,
  encoding: "hex" | "base64",
): string {
  return createHmac("sha256", key).update(text, "utf8").digest(encoding);
}

/** Compares two strings in time that does not depend on where they differ. */
export function safeEqual(a: string, b: string): boolean {
  // Hashing first gives equal-length inputs, so the length is not leaked either.
  const ha = createHash("sha256").update(a, "utf8").digest();
  const hb = createHash("sha256").update(b, "utf8").digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

const B64URL = { alphabet: "base64url", omitPadding: true } as const;
const B64URL_TEXT = /^[A-Za-z0-9_-]*={0,2}$/;
const DECODER = new TextDecoder();

/** Base64url of bytes (no padding). */
export function b64url(bytes: Uint8Array): string {
  return bytes.toBase64(B64URL);
}

/** Base64url text (no padding) back to bytes; undefined when it is not base64url. */
export function fromB64url(text: string): Uint8Array | undefined {
  if (!B64URL_TEXT.test(text)) return undefined;
  try {
    return Uint8Array.fromBase64(text, B64URL);
  } catch {
    return undefined;
  }
}

/** Base64url text back to UTF-8; undefined when it is not base64url. */
export function fromB64urlText(text: string): string | undefined {
  const bytes = fromB64url(text);
  return bytes === undefined ? undefined : DECODER.decode(bytes);
}
