/**
 * Verification of search-engine crawlers by reverse DNS, for bot policies that exempt verified
 * good bots: a User-Agent claiming a known crawler is believed only when the address's PTR
 * name lies under that crawler's domain and resolves forward to the same address. Results are
 * cached (bounded). Without DNS (no network, resolver failure or timeout) nothing verifies, so
 * the crawler is treated as any other client of the policy - challenged, never waved through.
 */
import type { Clock } from "../core/clock.ts";

interface Crawler {
  readonly agent: RegExp;
  readonly domains: readonly string[];
}

const CRAWLERS: readonly Crawler[] = [
  {
    agent: /\bGooglebot\b|\bGoogle-InspectionTool\b|\bAdsBot-Google\b/i,
    domains: ["googlebot.com", "google.com", "googleusercontent.com"],
  },
  { agent: /\bbingbot\b|\bBingPreview\b/i, domains: ["search.msn.com"] },
  { agent: /\bApplebot\b/i, domains: ["applebot.apple.com"] },
  { agent: /\bYandex(?:Bot|Images)\b/i, domains: ["yandex.ru", "yandex.net", "yandex.com"] },
  { agent: /\bBaiduspider\b/i, domains: ["baidu.com", "baidu.jp"] },
  { agent: /\bDuckDuckBot\b/i, domains: ["duckduckgo.com"] },
];

/** DNS as the verifier needs it; `Deno.resolveDns` in production, a fake in tests. */
export interface Resolver {
  reverse(ip: string): Promise<string[]>;
  forward(name: string): Promise<string[]>;
}

export const denoResolver: Resolver = {
  reverse: (ip) => Deno.resolveDns(ip, "PTR", { signal: AbortSignal.timeout(2000) }),
  async forward(name) {
    const [a, aaaa] = await Promise.allSettled([
      Deno.resolveDns(name, "A", { signal: AbortSignal.timeout(2000) }),
      Deno.resolveDns(name, "AAAA", { signal: AbortSignal.timeout(2000) }),
    ]);
    return [
      ...(a.status === "fulfilled" ? a.value : []),
      ...(aaaa.status === "fulfilled" ? aaaa.value : []),
    ];
  },
};

/** The crawler a User-Agent claims to be, if any. */
export function claimedCrawler(userAgent: string | null): Crawler | undefined {
  if (!userAgent) return undefined;
  return CRAWLERS.find((c) => c.agent.test(userAgent));
}

const MAX_CACHED = 10_000;
const OK_TTL_MS = 60 * 60_000;
const FAIL_TTL_MS = 5 * 60_000;

export function createGoodBotVerifier(deps: { resolver: Resolver; clock: Clock }) {
  const cache = new Map<string, { ok: boolean; until: number }>();

  async function check(ip: string, crawler: Crawler): Promise<boolean> {
    try {
      for (const name of await deps.resolver.reverse(ip)) {
        const host = name.replace(/\.$/, "").toLowerCase();
        if (!crawler.domains.some((d) => host === d || host.endsWith(`.${d}`))) continue;
        if ((await deps.resolver.forward(host)).includes(ip)) return true;
      }
    } catch {
      // No DNS answer: not verified.
    }
    return false;
  }

  return {
    /** True when `ip` is a verified crawler of the kind its User-Agent claims. */
    async verify(ip: string, userAgent: string | null): Promise<boolean> {
      const crawler = claimedCrawler(userAgent);
      if (!crawler) return false;
      const key = `${ip}|${crawler.domains[0]}`;
      const now = deps.clock.now();
      const hit = cache.get(key);
      if (hit && hit.until > now) return hit.ok;
      const ok = await check(ip, crawler);
      if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
      cache.set(key, { ok, until: now + (ok ? OK_TTL_MS : FAIL_TTL_MS) });
      return ok;
    },
  };
}

export type GoodBotVerifier = ReturnType<typeof createGoodBotVerifier>;
