/**
 * Recovery codes of two-factor authentication: what they look like, how typed input is read
 * back, and the keyed hash the store keeps instead of them. A code is 12 symbols of Crockford's
 * base32 (60 bits from the injected random source), shown as `7KQM-2XDA-93PF`; input is read
 * case-insensitively, with spaces and hyphens ignored and the look-alikes I, L (1) and O (0)
 * folded, so a code copied or typed by hand still matches.
 */
import { fromB64url, hmac } from "../core/digest.ts";
import type { Random } from "../core/random.ts";

/** How many codes one set holds. */
export const RECOVERY_CODE_COUNT = 10;
/** Symbols per code, shown in groups of four. */
export const RECOVERY_CODE_LENGTH = 12;
const GROUP = 4;
/** Crockford's base32: 32 symbols (5 bits each, unbiased from a byte), no I, L, O or U. */
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const SYMBOLS = new RegExp(`^[${ALPHABET}]{${RECOVERY_CODE_LENGTH}}$`);
const IGNORED = /[\s-]/g;
const GROUPS = new RegExp(`.{${GROUP}}`, "g");
const FOLD: Readonly<Record<string, string>> = { I: "1", L: "1", O: "0" };
/** Separates this use of the two-factor key from its others (sealing secrets). */
const KEY_LABEL = "waf recovery codes v1";

/** `count` fresh codes, formatted for showing (`XXXX-XXXX-XXXX`), all different. */
export function newRecoveryCodes(random: Random, count = RECOVERY_CODE_COUNT): string[] {
  const codes = new Set<string>();
  while (codes.size < count) {
    let plain = "";
    for (const b of random.bytes(RECOVERY_CODE_LENGTH)) plain += ALPHABET[b & 31];
    codes.add(plain.match(GROUPS)!.join("-"));
  }
  return [...codes];
}

/** The canonical form of typed input (12 symbols), or undefined when it cannot be a code. */
export function normalizeRecoveryCode(input: string): string | undefined {
  const text = input.replace(IGNORED, "").toUpperCase().replace(/[ILO]/g, (c) => FOLD[c]!);
  return SYMBOLS.test(text) ? text : undefined;
}

/** The key recovery codes are hashed under, derived from the two-factor key file's bytes. */
export function recoveryKey(twoFactorKey: Uint8Array): Uint8Array {
  return fromB64url(hmac(twoFactorKey, KEY_LABEL))!;
}

/**
 * The stored form of a code: HMAC-SHA256 under `key`, bound to the account, so neither the store
 * alone nor a hash copied onto another account tells or opens anything.
 */
export function recoveryHash(key: Uint8Array, userId: string, normalized: string): string {
  return hmac(key, `${userId}:${normalized}`);
}
