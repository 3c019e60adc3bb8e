/**
 * Bot-challenge state of this process: the signing key, one puzzle issuer per (difficulty,
 * clearance lifetime), and clearance-cookie checks. Everything stays in memory (bounded); the
 * key is random per process unless injected, so a restart asks browsers to solve once more.
 *
 * A puzzle is a signed token (`mod/core/signed_token.ts`) whose claims carry a random nonce, the
 * difficulty, an expiry and a hash of the client address and User-Agent, so a puzzle solved by
 * one client cannot be replayed by another. Each nonce is accepted once (a bounded in-memory
 * used-set). The clearance cookie is a signed token too, binding the same client hash.
 */
import { createHash } from "node:crypto";
import { solves } from "../../engine/bot.ts";
import type { Clock } from "../core/clock.ts";
import { type Random, randomHex } from "../core/random.ts";
import { createSignedTokens, type SignedTokens } from "../core/signed_token.ts";

export const CLEARANCE_COOKIE = "waf_clearance";
export const DEFAULT_DIFFICULTY = 16;
/** Tokens longer than this are refused before any work. */
const MAX_TOKEN = 1024;

export interface Puzzle {
  readonly token: string;
  readonly nonce: string;
  readonly difficulty: number;
  readonly expiresAt: number;
}

export type VerifyFailure =
  | "malformed"
  | "bad_signature"
  | "expired"
  | "wrong_client"
  | "reused"
  | "wrong_answer";

/** Whether a posted answer solved its puzzle, or why not. */
export type VerifyResult = { ok: true } | { ok: false; reason: VerifyFailure };

/** The client a puzzle answer comes from: its address and User-Agent. */
export interface ChallengeClient {
  readonly ip: string;
  readonly userAgent: string;
}

/** Short hash binding a token to one client address and User-Agent. */
export function clientBinding(ip: string, userAgent: string): string {
  return createHash("sha256").update(`${ip}\n${userAgent}`).digest("base64url").slice(0, 22);
}

/**
 * The used-nonce set: in memory for one thread, or shared by the data-plane workers
 * (`mod/data_plane/shared_state.ts`) so a puzzle is single-use across all of them.
 */
export interface NonceStore {
  /** True when `nonce` was used and has not expired. */
  has(nonce: string, now: number): boolean;
  /** Marks `nonce` used until `expiresAt`; false when it already was (another thread won). */
  add(nonce: string, expiresAt: number, now: number): boolean;
  /** Nonces currently remembered. */
  size(): number;
}

/** The in-memory used-nonce set, bounded (the oldest are forgotten first). */
export function memoryNonces(maxUsed = 100_000): NonceStore {
  const used = new Map<string, number>();
  return {
    has: (nonce) => used.has(nonce),
    add(nonce, expiresAt, now) {
      if (used.has(nonce)) return false;
      for (const [n, exp] of used) {
        if (exp > now && used.size < maxUsed) break;
        used.delete(n);
      }
      used.set(nonce, expiresAt);
      return true;
    },
    size: () => used.size,
  };
}

export interface ChallengeIssuerOptions {
  readonly secret: Uint8Array;
  /** Leading zero bits required (16 takes a browser a fraction of a second). */
  readonly difficulty: number;
  readonly puzzleTtlMs: number;
  readonly clearanceTtlMs: number;
  /** Used nonces remembered (bounded; the oldest are forgotten first). */
  readonly maxUsed?: number;
  /** Signed tokens under `secret` (issuers sharing a secret may share these). */
  readonly tokens?: SignedTokens;
  /** Where used nonces are kept (default: in memory, `maxUsed` of them). */
  readonly used?: NonceStore;
}

/** Issues and verifies puzzles and clearance cookies with one secret. */
export function createChallengeIssuer(opts: ChallengeIssuerOptions) {
  const tokens = opts.tokens ?? createSignedTokens(opts.secret, { maxLength: MAX_TOKEN });
  const used = opts.used ?? memoryNonces(opts.maxUsed);

  return {
    /** A fresh puzzle for a client; `nonce` comes from the caller's random source. */
    issue(nonce: string, ip: string, userAgent: string, now: number): Puzzle {
      const expiresAt = now + opts.puzzleTtlMs;
      const token = tokens.sign({
        n: nonce,
        d: opts.difficulty,
        e: expiresAt,
        c: clientBinding(ip, userAgent),
      });
      return { token, nonce, difficulty: opts.difficulty, expiresAt };
    },

    /** Checks a posted answer; a nonce is consumed by its first valid answer. */
    verify(
      token: string,
      answer: string,
      client: ChallengeClient,
      now: number,
    ): VerifyResult {
      const opened = tokens.open(token, now);
      if (!opened.ok) return opened;
      const { n, d, e, c } = opened.claims;
      if (typeof n !== "string" || typeof d !== "number") return { ok: false, reason: "malformed" };
      if (c !== clientBinding(client.ip, client.userAgent)) {
        return { ok: false, reason: "wrong_client" };
      }
      if (used.has(n, now)) return { ok: false, reason: "reused" };
      if (answer.length > 32 || !solves(n, answer, d)) {
        return { ok: false, reason: "wrong_answer" };
      }
      // Marking it used is the atomic step: of two threads with the same answer, one wins.
      if (!used.add(n, typeof e === "number" ? e : now, now)) {
        return { ok: false, reason: "reused" };
      }
      return { ok: true };
    },

    /** A clearance cookie value for a client that solved a puzzle. */
    clearance(ip: string, userAgent: string, now: number): { value: string; expiresAt: number } {
      const expiresAt = now + opts.clearanceTtlMs;
      return { value: tokens.sign({ e: expiresAt, c: clientBinding(ip, userAgent) }), expiresAt };
    },

    /** True when `value` is an unexpired clearance for this client. */
    checkClearance(value: string, ip: string, userAgent: string, now: number): boolean {
      const opened = tokens.open(value, now);
      return opened.ok && opened.claims.c === clientBinding(ip, userAgent);
    },

    /** Nonces currently remembered as used. */
    usedCount: (): number => used.size(),
  };
}

export type ChallengeIssuer = ReturnType<typeof createChallengeIssuer>;

function cookieValue(cookies: string, name: string): string | undefined {
  if (!cookies.includes(name)) return undefined;
  for (const part of cookies.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function createChallenges(deps: {
  readonly clock: Clock;
  readonly random: Random;
  readonly challengeSecret?: Uint8Array;
  readonly puzzleTtlMs?: number;
  /** The used-nonce set (default: in memory); data-plane workers share one. */
  readonly usedNonces?: NonceStore;
}) {
  const secret = deps.challengeSecret ?? deps.random.bytes(32);
  const tokens = createSignedTokens(secret, { maxLength: MAX_TOKEN });
  const issuers = new Map<string, ChallengeIssuer>();
  const used = deps.usedNonces ?? memoryNonces();

  function issuer(difficulty: number, clearanceMinutes: number): ChallengeIssuer {
    const key = `${difficulty}/${clearanceMinutes}`;
    let i = issuers.get(key);
    if (!i) {
      i = createChallengeIssuer({
        secret,
        tokens,
        difficulty,
        puzzleTtlMs: deps.puzzleTtlMs ?? 5 * 60_000,
        clearanceTtlMs: clearanceMinutes * 60_000,
        used,
      });
      issuers.set(key, i);
    }
    return i;
  }
  // One issuer verifies every puzzle (the difficulty travels signed inside the token), so the
  // used-nonce set is shared and a puzzle is single-use whichever policy issued it.
  const verifier = issuer(DEFAULT_DIFFICULTY, 60);

  return {
    issuer,
    newNonce: (): string => randomHex(deps.random, 16),
    verify: verifier.verify,
    /** True when the Cookie header carries an unexpired clearance for this client. */
    hasClearance(cookies: string, ip: string, userAgent: string): boolean {
      const value = cookieValue(cookies, CLEARANCE_COOKIE);
      return value !== undefined &&
        verifier.checkClearance(value, ip, userAgent, deps.clock.now());
    },
  };
}

export type Challenges = ReturnType<typeof createChallenges>;
