/**
 * Bot-challenge state of this process: the signing key, one puzzle issuer per (difficulty,
 * clearance lifetime), and clearance-cookie checks. Everything stays in memory (bounded); the
 * key is random per process unless injected, so a restart asks browsers to solve once more.
 */
import { type ChallengeIssuer, createChallengeIssuer } from "../../engine/bot.ts";
import type { Clock } from "../core/clock.ts";
import { type Random, randomHex } from "../core/random.ts";

export const CLEARANCE_COOKIE = "waf_clearance";
export const DEFAULT_DIFFICULTY = 16;

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
}) {
  const secret = deps.challengeSecret ?? deps.random.bytes(32);
  const issuers = new Map<string, ChallengeIssuer>();

  function issuer(difficulty: number, clearanceMinutes: number): ChallengeIssuer {
    const key = `${difficulty}/${clearanceMinutes}`;
    let i = issuers.get(key);
    if (!i) {
      i = createChallengeIssuer({
        secret,
        difficulty,
        puzzleTtlMs: deps.puzzleTtlMs ?? 5 * 60_000,
        clearanceTtlMs: clearanceMinutes * 60_000,
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
