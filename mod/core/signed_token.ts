/**
 * Signed tokens: a JSON payload that carries its expiry (`e`, ms since the epoch), encoded as
 * `[<version>.]base64url(payload).base64url(HMAC-SHA256)` where the MAC covers everything before
 * it. Verification compares MACs in constant time, then parses, then checks the expiry. The bot
 * challenge (puzzles and clearance cookies) and the login CAPTCHA (challenges and receipts) use
 * it; each adds its own claims and single-use bookkeeping on top.
 */
import { timingSafeEqual } from "node:crypto";
import { b64url, fromB64urlText, hmac } from "./digest.ts";

/** Why a token was refused at this layer. */
export type TokenFailure = "malformed" | "bad_signature" | "expired";

export type OpenedToken =
  | { readonly ok: true; readonly claims: Readonly<Record<string, unknown>> & { e: number } }
  | { readonly ok: false; readonly reason: TokenFailure };

export interface SignedTokens {
  /** The token of `claims`; `claims.e` is its expiry. */
  sign<T extends { readonly e: number }>(claims: T): string;
  /** The claims of a token signed with this key and unexpired at `now`, or why not. */
  open(token: string, now: number): OpenedToken;
}

const ENCODER = new TextEncoder();
const MALFORMED: OpenedToken = { ok: false, reason: "malformed" };
const BAD_SIGNATURE: OpenedToken = { ok: false, reason: "bad_signature" };
const EXPIRED: OpenedToken = { ok: false, reason: "expired" };

/** Equal-length MACs compared in time independent of where they differ. */
function sameMac(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(ENCODER.encode(a), ENCODER.encode(b));
}

/**
 * Tokens under `key`. `version` prefixes every token (and is covered by the MAC); `maxLength`
 * refuses oversized input before any work.
 */
export function createSignedTokens(
  key: Uint8Array,
  options: { readonly version?: string; readonly maxLength?: number } = {},
): SignedTokens {
  const prefix = options.version === undefined ? "" : `${options.version}.`;
  const maxLength = options.maxLength ?? 4096;
  return {
    sign(claims) {
      const signed = prefix + b64url(ENCODER.encode(JSON.stringify(claims)));
      return `${signed}.${hmac(key, signed)}`;
    },
    open(token, now) {
      if (token.length > maxLength || !token.startsWith(prefix)) return MALFORMED;
      const dot = token.lastIndexOf(".");
      if (dot <= prefix.length || token.indexOf(".", prefix.length) !== dot) return MALFORMED;
      const signed = token.slice(0, dot);
      if (!sameMac(hmac(key, signed), token.slice(dot + 1))) return BAD_SIGNATURE;
      let claims: unknown;
      try {
        claims = JSON.parse(fromB64urlText(signed.slice(prefix.length)) ?? "");
      } catch {
        return MALFORMED;
      }
      if (claims === null || typeof claims !== "object") return MALFORMED;
      const e = (claims as { e?: unknown }).e;
      if (typeof e !== "number") return MALFORMED;
      if (e <= now) return EXPIRED;
      return { ok: true, claims: claims as Record<string, unknown> & { e: number } };
    },
  };
}
