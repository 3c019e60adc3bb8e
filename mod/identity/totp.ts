/**
 * RFC 6238 time-based one-time passwords: SHA-1, 6 digits, 30-second steps. The only file that
 * imports `otpauth`. Time always comes from the caller (the service clock), never from the
 * library, so tests drive it with a fake clock and the time-sync work can discipline it later.
 */
import * as OTPAuth from "otpauth";
import { safeEqual } from "../core/digest.ts";
import type { Random } from "../core/random.ts";

export const TOTP_ALGORITHM = "SHA1";
export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_MS = 30_000;
/** Steps accepted on either side of the current one (clock drift, slow typing). */
export const TOTP_WINDOW = 1;
/** 160 bits, the size RFC 4226 recommends for HMAC-SHA-1. */
const SECRET_BYTES = 20;
const CODE = /^[0-9]{6}$/;

/** A fresh secret from the injected random source. */
export function newTotpSecret(random: Random): Uint8Array {
  return random.bytes(SECRET_BYTES);
}

/** The secret as base32, for typing it into an authenticator by hand. */
export function totpBase32(secret: Uint8Array): string {
  return toOtpSecret(secret).base32;
}

/** The secret behind a base32 text (what an authenticator stores when typed in by hand). */
export function totpSecretFromBase32(text: string): Uint8Array {
  return new Uint8Array(OTPAuth.Secret.fromBase32(text).buffer);
}

/** The `otpauth://totp/...` URI an authenticator app binds to. */
export function totpUri(secret: Uint8Array, issuer: string, account: string): string {
  return new OTPAuth.TOTP({
    issuer,
    label: account,
    algorithm: TOTP_ALGORITHM,
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_MS / 1000,
    secret: toOtpSecret(secret),
  }).toString();
}

/** The time step that contains `nowMs`. */
export function totpStep(nowMs: number): number {
  return Math.floor(nowMs / TOTP_PERIOD_MS);
}

/** The code for one time step. */
export function totpCode(secret: Uint8Array, step: number): string {
  return OTPAuth.HOTP.generate({
    secret: toOtpSecret(secret),
    algorithm: TOTP_ALGORITHM,
    digits: TOTP_DIGITS,
    counter: step,
  });
}

/**
 * The newest step within ±TOTP_WINDOW of `nowMs` whose code is `code`, or undefined. Every
 * candidate is compared in constant time, so timing does not tell which step matched.
 */
export function matchTotpStep(
  secret: Uint8Array,
  code: string,
  nowMs: number,
): number | undefined {
  if (!CODE.test(code)) return undefined;
  const current = totpStep(nowMs);
  let matched: number | undefined;
  for (let step = current - TOTP_WINDOW; step <= current + TOTP_WINDOW; step++) {
    if (safeEqual(totpCode(secret, step), code)) matched = step;
  }
  return matched;
}

function toOtpSecret(secret: Uint8Array): OTPAuth.Secret {
  // A copy, so the library never holds (or zeroes) the caller's buffer.
  return new OTPAuth.Secret({ buffer: secret.slice().buffer });
}
