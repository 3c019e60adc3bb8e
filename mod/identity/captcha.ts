/**
 * A proof-of-work CAPTCHA the browser solves without third parties: the server signs a
 * challenge (HMAC), the client finds a nonce whose SHA-256 together with the challenge has
 * `difficulty` leading zero bits (the same puzzle as the data plane's bot challenge,
 * `engine/bot.ts`), and the server checks it. Challenges and receipts expire
 * after two minutes and are single-use; a receipt is bound to one username and one client
 * address. With a store of spent ids (`spent`, the composition's: shared by every controller of
 * a deployment, kept across restarts) a challenge fetched from one controller can be answered on
 * another and its receipt spent on a third, each once. Without one (tests of this module), the
 * used-sets are this process's memory and signed values carry its boot id, so nothing issued
 * before a restart (when the sets were lost) is accepted after it.
 */
import type { Clock } from "../core/clock.ts";
import { safeEqual, sha256Hex } from "../core/digest.ts";
import { AppError } from "../core/errors.ts";
import { type Random, randomHex } from "../core/random.ts";
import { createSignedTokens } from "../core/signed_token.ts";
import { solves } from "../../engine/bot.ts";

export const CAPTCHA_TTL_MS = 120_000;
export const CAPTCHA_ALGORITHM = "sha256-leading-zero-bits";
const VERSION = "v1";

interface ChallengeClaims {
  readonly t: "c";
  readonly id: string;
  readonly d: number;
  readonly e: number;
  readonly ip: string;
  readonly b: string;
}

interface ReceiptClaims {
  readonly t: "r";
  readonly id: string;
  readonly u: string;
  readonly e: number;
  readonly ip: string;
  readonly b: string;
}

export interface Challenge {
  readonly challenge: string;
  readonly algorithm: typeof CAPTCHA_ALGORITHM;
  readonly difficulty: number;
  readonly expires_at: string;
}

/** Why a challenge answer or a receipt was refused (kept for the audit record). */
export type CaptchaFailure =
  | "malformed"
  | "bad_signature"
  | "expired"
  | "reused"
  | "wrong_client"
  | "wrong_username"
  | "wrong_answer";

export class CaptchaError extends AppError {
  readonly reason: CaptchaFailure;
  constructor(reason: CaptchaFailure) {
    super(
      403,
      "CAPTCHA_INVALID",
      `CAPTCHA refused (${reason.replace("_", " ")}): fetch a fresh challenge and solve it again`,
      { details: { reason } },
    );
    this.reason = reason;
  }
}

/** Solves a challenge by brute force (tests and command-line clients). */
export function solveChallenge(challenge: string, difficulty: number): string {
  for (let n = 0;; n++) if (solves(challenge, String(n), difficulty)) return String(n);
}

/** Ids spent once for the whole deployment (db/spent_ids_repo.ts). */
export interface SpentIds {
  /** True the first time `id` of `kind` is spent, false after. */
  spend(kind: string, id: string, expiresAt: number): boolean;
  sweep(kind: string, now: number): number;
}

/** The used-sets in this process's memory (no store given). */
function memorySpentIds(): SpentIds {
  const sets = new Map<string, Map<string, number>>();
  return {
    spend(kind, id, expiresAt) {
      let set = sets.get(kind);
      if (!set) sets.set(kind, set = new Map());
      if (set.has(id)) return false;
      set.set(id, expiresAt);
      return true;
    },
    sweep(kind, now) {
      const set = sets.get(kind);
      let n = 0;
      for (const [id, exp] of set ?? []) if (exp <= now) n += Number(set!.delete(id));
      return n;
    },
  };
}

export function createCaptcha(
  deps: { key: Uint8Array; clock: Clock; random: Random; spent?: SpentIds },
) {
  // Spent ids kept in the store outlive the process: tokens need no boot id then.
  const boot = deps.spent ? "shared" : randomHex(deps.random, 8);
  const spent = deps.spent ?? memorySpentIds();

  const tokens = createSignedTokens(deps.key, { version: VERSION });
  const sign = (claims: ChallengeClaims | ReceiptClaims): string => tokens.sign(claims);

  const open = (token: string, type: "c" | "r"): ChallengeClaims | ReceiptClaims => {
    const opened = tokens.open(token, deps.clock.now());
    if (!opened.ok) throw new CaptchaError(opened.reason);
    const claims = opened.claims as unknown as ChallengeClaims | ReceiptClaims;
    if (claims.t !== type) throw new CaptchaError("malformed");
    if (claims.b !== boot) throw new CaptchaError("expired");
    return claims;
  };

  const sweep = () => {
    const now = deps.clock.now();
    spent.sweep("captcha_challenge", now);
    spent.sweep("captcha_receipt", now);
  };

  return {
    /** A fresh signed challenge for `clientIp`. */
    challenge(clientIp: string, difficulty: number): Challenge {
      const claims: ChallengeClaims = {
        t: "c",
        id: randomHex(deps.random),
        d: difficulty,
        e: deps.clock.now() + CAPTCHA_TTL_MS,
        ip: clientIp,
        b: boot,
      };
      return {
        challenge: sign(claims),
        algorithm: CAPTCHA_ALGORITHM,
        difficulty,
        expires_at: new Date(claims.e).toISOString(),
      };
    },

    /**
     * Checks an answer and returns a one-time receipt bound to `username` and `clientIp`.
     * The challenge is spent by this call whether the answer is right or not.
     */
    verify(input: { challenge: string; nonce: string; username: string; clientIp: string }): {
      receipt: string;
      expires_at: string;
    } {
      const claims = open(input.challenge, "c") as ChallengeClaims;
      if (!spent.spend("captcha_challenge", claims.id, claims.e)) throw new CaptchaError("reused");
      if (claims.ip !== input.clientIp) throw new CaptchaError("wrong_client");
      if (!solves(input.challenge, input.nonce, claims.d)) throw new CaptchaError("wrong_answer");
      const receipt: ReceiptClaims = {
        t: "r",
        id: randomHex(deps.random),
        u: input.username,
        e: deps.clock.now() + CAPTCHA_TTL_MS,
        ip: input.clientIp,
        b: boot,
      };
      return { receipt: sign(receipt), expires_at: new Date(receipt.e).toISOString() };
    },

    /** Spends a receipt for a login of `username` from `clientIp`; throws when refused. */
    consumeReceipt(receipt: string, username: string, clientIp: string): void {
      const claims = open(receipt, "r") as ReceiptClaims;
      if (!spent.spend("captcha_receipt", claims.id, claims.e)) throw new CaptchaError("reused");
      if (claims.ip !== clientIp) throw new CaptchaError("wrong_client");
      // Exact comparison: usernames are never normalised, receipts included.
      if (!safeEqual(claims.u, username)) throw new CaptchaError("wrong_username");
    },

    sweep,
    /** A short digest of a receipt for audit records (the receipt itself is a credential). */
    fingerprint(token: string): string {
      return sha256Hex(token).slice(0, 12);
    },
  };
}

export type Captcha = ReturnType<typeof createCaptcha>;
