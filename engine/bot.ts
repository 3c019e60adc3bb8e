/**
 * Bot policy building blocks (pure): classification of suspicious clients, the signed
 * proof-of-work puzzle, and the signed clearance cookie.
 *
 * A puzzle is `base64url(payload).base64url(hmac)`: the payload carries a random nonce, the
 * difficulty, an expiry and a hash of the client address and User-Agent, so a puzzle solved
 * by one client cannot be replayed by another. The browser searches for a counter whose
 * SHA-256 over `nonce:counter` starts with `difficulty` zero bits. Each nonce is accepted once
 * (a bounded in-memory used-set). The clearance cookie has the same shape, binds the same
 * client hash, and expires.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { Buffer } from "node:buffer";

export type SuspicionReason = "no_user_agent" | "bad_user_agent" | "headless" | "rate";

/** Tools that announce themselves and never run a page's JavaScript. */
const BAD_AGENTS =
  /\b(?:curl|wget|python-requests|python-urllib|aiohttp|httpx|go-http-client|java\/|okhttp|libwww-perl|lwp::|sqlmap|nikto|nmap|masscan|zgrab|nuclei|httpclient|scrapy|winhttp|powershell)\b/i;
/** Automation frameworks and headless browsers. */
const HEADLESS =
  /\b(?:headlesschrome|phantomjs|puppeteer|playwright|selenium|webdriver|slimerjs)\b/i;

/**
 * Why a client looks automated, or undefined when it does not.
 *
 * @param userAgent the User-Agent header, undefined when absent
 * @param overRate whether the client is over the policy's rate threshold
 */
export function classifyClient(
  userAgent: string | undefined,
  overRate: boolean,
): SuspicionReason | undefined {
  return classifyAgent(userAgent) ?? (overRate ? "rate" : undefined);
}

/** User-Agent verdicts by agent text: real traffic repeats a few hundred agents. */
const AGENT_VERDICTS = new Map<string, SuspicionReason | null>();
const MAX_AGENT_VERDICTS = 4096;
const MAX_CACHED_AGENT = 512;

/** What the User-Agent alone says (memoised; the two scans cost more than the lookup). */
export function classifyAgent(userAgent: string | undefined): SuspicionReason | undefined {
  if (userAgent === undefined) return "no_user_agent";
  const known = AGENT_VERDICTS.get(userAgent);
  if (known !== undefined) return known ?? undefined;
  const verdict = userAgent.trim() === ""
    ? "no_user_agent"
    : HEADLESS.test(userAgent)
    ? "headless"
    : BAD_AGENTS.test(userAgent)
    ? "bad_user_agent"
    : undefined;
  if (userAgent.length <= MAX_CACHED_AGENT) {
    if (AGENT_VERDICTS.size >= MAX_AGENT_VERDICTS) AGENT_VERDICTS.clear();
    AGENT_VERDICTS.set(userAgent, verdict ?? null);
  }
  return verdict;
}

function b64url(data: string | Uint8Array): string {
  return Buffer.from(data).toString("base64url");
}

function sign(secret: Uint8Array, payload: string): string {
  return createHmac("sha256", secret).update(payload).digest("base64url");
}

/** Short hash binding a token to one client address and User-Agent. */
export function clientBinding(ip: string, userAgent: string): string {
  return createHash("sha256").update(`${ip}\n${userAgent}`).digest("base64url").slice(0, 22);
}

function seal(secret: Uint8Array, payload: unknown): string {
  const body = b64url(JSON.stringify(payload));
  return `${body}.${sign(secret, body)}`;
}

function open(secret: Uint8Array, token: string): unknown {
  const dot = token.indexOf(".");
  if (dot <= 0 || token.length > 1024) return undefined;
  const body = token.slice(0, dot);
  const mac = Buffer.from(token.slice(dot + 1), "base64url");
  const expected = Buffer.from(sign(secret, body), "base64url");
  if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) return undefined;
  try {
    return JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
}

export interface Puzzle {
  readonly token: string;
  readonly nonce: string;
  readonly difficulty: number;
  readonly expiresAt: number;
}

interface PuzzlePayload {
  readonly n: string;
  readonly d: number;
  readonly e: number;
  readonly c: string;
}

/** Counts leading zero bits of a digest. */
function leadingZeroBits(digest: Uint8Array): number {
  let bits = 0;
  for (const byte of digest) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

/** True when SHA-256 of `nonce:answer` starts with `difficulty` zero bits. */
export function solves(nonce: string, answer: string, difficulty: number): boolean {
  return leadingZeroBits(createHash("sha256").update(`${nonce}:${answer}`).digest()) >= difficulty;
}

export type VerifyFailure =
  | "malformed"
  | "bad_signature"
  | "expired"
  | "wrong_client"
  | "reused"
  | "wrong_answer";

export interface ChallengeIssuerOptions {
  readonly secret: Uint8Array;
  /** Leading zero bits required (16 takes a browser a fraction of a second). */
  readonly difficulty: number;
  readonly puzzleTtlMs: number;
  readonly clearanceTtlMs: number;
  /** Used nonces remembered (bounded; the oldest are forgotten first). */
  readonly maxUsed?: number;
}

/** Issues and verifies puzzles and clearance cookies with one secret. */
export function createChallengeIssuer(opts: ChallengeIssuerOptions) {
  const used = new Map<string, number>();
  const maxUsed = opts.maxUsed ?? 100_000;

  function remember(nonce: string, expiresAt: number, now: number): void {
    for (const [n, exp] of used) {
      if (exp > now && used.size < maxUsed) break;
      used.delete(n);
    }
    used.set(nonce, expiresAt);
  }

  return {
    /** A fresh puzzle for a client; `nonce` comes from the caller's random source. */
    issue(nonce: string, ip: string, userAgent: string, now: number): Puzzle {
      const expiresAt = now + opts.puzzleTtlMs;
      const payload: PuzzlePayload = {
        n: nonce,
        d: opts.difficulty,
        e: expiresAt,
        c: clientBinding(ip, userAgent),
      };
      return { token: seal(opts.secret, payload), nonce, difficulty: opts.difficulty, expiresAt };
    },

    /** Checks a posted answer; a nonce is consumed by its first valid answer. */
    verify(
      token: string,
      answer: string,
      ip: string,
      userAgent: string,
      now: number,
    ): { ok: true } | { ok: false; reason: VerifyFailure } {
      const p = open(opts.secret, token) as Partial<PuzzlePayload> | undefined;
      if (p === undefined) return { ok: false, reason: "bad_signature" };
      if (typeof p.n !== "string" || typeof p.d !== "number" || typeof p.e !== "number") {
        return { ok: false, reason: "malformed" };
      }
      if (p.e <= now) return { ok: false, reason: "expired" };
      if (p.c !== clientBinding(ip, userAgent)) return { ok: false, reason: "wrong_client" };
      if (used.has(p.n)) return { ok: false, reason: "reused" };
      if (answer.length > 32 || !solves(p.n, answer, p.d)) {
        return { ok: false, reason: "wrong_answer" };
      }
      remember(p.n, p.e, now);
      return { ok: true };
    },

    /** A clearance cookie value for a client that solved a puzzle. */
    clearance(ip: string, userAgent: string, now: number): { value: string; expiresAt: number } {
      const expiresAt = now + opts.clearanceTtlMs;
      return {
        value: seal(opts.secret, { e: expiresAt, c: clientBinding(ip, userAgent) }),
        expiresAt,
      };
    },

    /** True when `value` is an unexpired clearance for this client. */
    checkClearance(value: string, ip: string, userAgent: string, now: number): boolean {
      const p = open(opts.secret, value) as { e?: unknown; c?: unknown } | undefined;
      return p !== undefined && typeof p.e === "number" && p.e > now &&
        p.c === clientBinding(ip, userAgent);
    },

    /** Nonces currently remembered as used. */
    usedCount: (): number => used.size,
  };
}

export type ChallengeIssuer = ReturnType<typeof createChallengeIssuer>;
