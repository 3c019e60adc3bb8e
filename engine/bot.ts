/**
 * Bot policy building blocks (pure): classification of suspicious clients, and the
 * proof-of-work check: the browser searches for a counter whose SHA-256 over `nonce:counter`
 * starts with `difficulty` zero bits. The signed puzzles and clearance cookies built on it live
 * in `mod/protection/challenges.ts`.
 */
import { createHash } from "node:crypto";

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
