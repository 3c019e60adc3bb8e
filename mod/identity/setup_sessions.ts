/**
 * The setup sessions: the cookie the probe hands out, held in memory by its SHA-256 with its
 * expiry and the hash of the setup token that opened it, so rotating the token also ends older
 * setup sessions. At most a few are kept (the oldest go first).
 */
import { b64url, safeEqual, sha256Hex } from "../core/digest.ts";
import type { Random } from "../core/random.ts";

export const SETUP_SESSION_TTL_MS = 15 * 60_000;
const MAX_SETUP_SESSIONS = 32;

/** The live setup sessions of this process. */
export class SetupSessions {
  /** Setup session hash → expiry and the token hash it was opened with. */
  readonly #sessions = new Map<string, { expires: number; tokenHash: string }>();
  readonly #random: Random;

  constructor(random: Random) {
    this.#random = random;
  }

  /** Opens a session for the token with hash `tokenHash`; returns its cookie. */
  open(tokenHash: string, now: number): string {
    const sessions = this.#sessions;
    this.sweep(now);
    while (sessions.size >= MAX_SETUP_SESSIONS) sessions.delete(sessions.keys().next().value!);
    const cookie = b64url(this.#random.bytes(32));
    sessions.set(sha256Hex(cookie), { expires: now + SETUP_SESSION_TTL_MS, tokenHash });
    return cookie;
  }

  /** Whether `cookie` is a session opened with the token of hash `tokenHash`, live at `now()`. */
  valid(cookie: string | undefined, tokenHash: string | undefined, now: () => number): boolean {
    const s = cookie ? this.#sessions.get(sha256Hex(cookie)) : undefined;
    return s !== undefined && tokenHash !== undefined && s.expires > now() &&
      safeEqual(s.tokenHash, tokenHash);
  }

  /** Forgets the sessions expired at `now`. */
  sweep(now: number): void {
    for (const [h, s] of this.#sessions) if (s.expires <= now) this.#sessions.delete(h);
  }

  /** Ends every session (setup is complete). */
  clear(): void {
    this.#sessions.clear();
  }
}
