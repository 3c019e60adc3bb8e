/**
 * Per-request evaluation of the protection controls, one function per check: IP allow/block
 * lists and applied ALAP blocks, ACL rules, threat-intelligence indicators, bot policy, global
 * rate limit (the request-header checks); custom regex rules (after the body prefix is read);
 * ALAP exceptions and signature blocks around the semantic engine's verdict. Each check adds its
 * entry to the evaluation chain. The order they run in is the data-plane transaction's
 * (`routes/proxy/transaction.ts`), written there once.
 *
 * The compiled structures are immutable; what changes per request (rate counters, used puzzle
 * nonces, ALAP scores) lives here, bounded, and survives policy rebuilds that do not touch it.
 */
import type { AclRule } from "../../engine/acl.ts";
import { classifyClient } from "../../engine/bot.ts";
import type { Inspection } from "../../engine/types.ts";
import {
  type AlapAdjusted,
  AlapEnforcer,
  type AlapRequest,
  type AlapSite,
} from "./alap_enforce.ts";
import type { IpAddress } from "../../engine/ip_address.ts";
import {
  DEFAULT_UPSTREAM_KIND,
  normalizePath,
  type NormalPath,
  underPrefix,
} from "../../engine/path_normalize.ts";
import type { RequestView } from "../../engine/request_view.ts";
import type { Clock } from "../core/clock.ts";
import type { CompiledBotPolicy, CompiledProtection } from "./protection_compile.ts";
import type { RateLimitDoc } from "./protection_schema.ts";
import { type LimiterFactory, ProtectionLimiters } from "./protection_limiters.ts";
import {
  type ChallengeClient,
  type ChallengeIssuer,
  type Challenges,
  createChallenges,
  DEFAULT_DIFFICULTY,
  type NonceStore,
  type VerifyResult,
} from "./challenges.ts";
import type { Random } from "../core/random.ts";

/** The evaluation chain of the access-log record (one call per check). */
export interface ChainSink {
  add(check: string, result: string, rule?: string): void;
}

/** What a check sees of the request (the data-plane transaction is one). */
export interface CheckRequest {
  readonly siteId: string;
  readonly clientIp: string;
  /** The client address parsed once; undefined when it is not an address. */
  readonly ip: IpAddress | undefined;
  /** The request line and headers; header checks never read its body parts. */
  readonly view: RequestView;
  /** When the request started (the clock read once). */
  readonly now: number;
  /** Set when the client is a crawler verified by reverse DNS (see `good_bots.ts`). */
  readonly verifiedBot?: boolean;
}

/** What the request-header checks decided. */
export type PreVerdict =
  | { readonly kind: "pass"; readonly trusted: boolean }
  | { readonly kind: "block"; readonly check: string; readonly rule: string }
  | {
    readonly kind: "challenge";
    readonly check: string;
    readonly rule: string;
    readonly difficulty: number;
  }
  | { readonly kind: "rate_limited"; readonly retryAfterSeconds: number };

export type RuleVerdict =
  | { readonly kind: "pass"; readonly exhausted?: true }
  | { readonly kind: "block"; readonly rule: string }
  | { readonly kind: "challenge"; readonly rule: string };

export { CLEARANCE_COOKIE } from "./challenges.ts";
/** Every header check passed. */
export const PASS: PreVerdict = { kind: "pass", trusted: false };
/** An allow entry (IP list or ACL) trusts the client: the later header checks are skipped. */
export const TRUSTED: PreVerdict = { kind: "pass", trusted: true };
const RULE_PASS: RuleVerdict = { kind: "pass" };
/** The custom rules' budget ran out before every rule ran (the request is flagged). */
const RULE_EXHAUSTED: RuleVerdict = { kind: "pass", exhausted: true };

function limiterKey(doc: RateLimitDoc, req: CheckRequest): string {
  if (doc.key === "ip") return req.clientIp;
  if (doc.key === "ip_site") return `${req.clientIp}|${req.siteId}`;
  // The path as the upstream reads it: `/a`, `//a` and (where case folds) `/A` count as one.
  return `${req.clientIp}|${req.siteId}|${req.view.normalPath.key}`;
}

export interface ProtectionRuntimeDeps {
  readonly clock: Clock;
  readonly random: Random;
  /** HMAC key of puzzles and clearance cookies; per process unless injected. */
  readonly challengeSecret?: Uint8Array;
  /** Puzzle lifetime; the clearance lifetime comes from the bot policy. */
  readonly puzzleTtlMs?: number;
  /** Where used puzzle nonces are kept (default: in memory); data-plane workers share one. */
  readonly usedNonces?: NonceStore;
  /**
   * Makes the limiter named `name` (default: this thread's own); data-plane workers count in
   * shared memory, so a limit of N is N across all of them.
   */
  readonly limiter?: LimiterFactory;
}

function botPolicyFor(
  p: CompiledProtection,
  siteId: string,
  path: NormalPath,
): CompiledBotPolicy | undefined {
  for (const b of p.bot) {
    if (b.site_id !== null && b.site_id !== siteId) continue;
    if (underPrefix(path, b.path_prefix)) return b;
  }
  return undefined;
}

export function createProtectionRuntime(deps: ProtectionRuntimeDeps): ProtectionRuntime {
  return new ProtectionRuntime(deps);
}

export class ProtectionRuntime {
  readonly #challenges: Challenges;
  readonly #limiters: ProtectionLimiters;
  readonly #alap: AlapEnforcer;

  constructor(deps: ProtectionRuntimeDeps) {
    this.#challenges = createChallenges(deps);
    this.#limiters = new ProtectionLimiters(deps.limiter);
    this.#alap = new AlapEnforcer(deps.clock);
  }

  /**
   * True when any request-header check is configured. When none is, they would add nothing
   * to the chain and pass, so the transaction skips them (and the request view).
   */
  hasHeaderChecks(p: CompiledProtection): boolean {
    return p.ipList.size > 0 || p.alapBlocks.size > 0 || p.acl.size > 0 || p.threat.size > 0 ||
      p.bot.length > 0 || p.rateLimit.enabled;
  }

  /** True when a bot policy for this request exempts verified crawlers. */
  wantsBotVerification(p: CompiledProtection, siteId: string, path: NormalPath): boolean {
    const b = p.bot.length > 0 ? botPolicyFor(p, siteId, path) : undefined;
    return b !== undefined && b.mode !== "off" && b.verified_bots;
  }

  /** The issuer for a policy's puzzles (used by the challenge endpoint too). */
  issuer(difficulty: number, clearanceMinutes: number): ChallengeIssuer {
    return this.#challenges.issuer(difficulty, clearanceMinutes);
  }

  newNonce(): string {
    return this.#challenges.newNonce();
  }

  /**
   * Checks a posted answer. One issuer verifies every puzzle (the difficulty travels signed
   * inside the token), so the used-nonce set is shared and a puzzle is single-use everywhere.
   */
  verify(token: string, answer: string, client: ChallengeClient, now: number): VerifyResult {
    return this.#challenges.verify(token, answer, client, now);
  }

  /** A clearance cookie lasting as long as the bot policy of the return path says. */
  clearance(
    p: CompiledProtection,
    client: ChallengeClient,
    returnTo: { readonly siteId: string; readonly path: string },
    now: number,
  ): { value: string; expiresAt: number } {
    const path = normalizePath(returnTo.path.split("?", 1)[0]!, DEFAULT_UPSTREAM_KIND);
    const b = botPolicyFor(p, returnTo.siteId, path);
    return this.#challenges.issuer(b?.difficulty ?? DEFAULT_DIFFICULTY, b?.clearance_minutes ?? 60)
      .clearance(client.ip, client.userAgent, now);
  }

  /** IP allow/block lists, then applied ALAP blocks: a block, TRUSTED on allow, or nothing. */
  ipLists(p: CompiledProtection, req: CheckRequest, chain: ChainSink): PreVerdict | undefined {
    const ip = req.ip;
    if (!ip) return undefined;
    if (p.ipList.size > 0) {
      const hit = p.ipList.match(ip, req.siteId, req.view.normalPath, req.now);
      if (hit?.action === "allow") {
        chain.add("ip_list", "allow", hit.id);
        return TRUSTED;
      }
      if (hit) {
        chain.add("ip_list", "block", hit.id);
        return { kind: "block", check: "ip_list", rule: hit.id };
      }
      chain.add("ip_list", "pass");
    }
    if (p.alapBlocks.size > 0) {
      for (const d of p.alapBlocks.lookup(ip)) {
        if (d.siteId !== null && d.siteId !== req.siteId) continue;
        if (d.expiresAt !== null && d.expiresAt <= req.now) continue;
        chain.add("alap", "block", d.id);
        return { kind: "block", check: "alap", rule: d.id };
      }
    }
    return undefined;
  }

  /** ACL rules: a block or challenge, TRUSTED on allow, or nothing. */
  acl(p: CompiledProtection, req: CheckRequest, chain: ChainSink): PreVerdict | undefined {
    if (p.acl.size === 0) return undefined;
    const r = p.acl.evaluate(req.view, req.ip, req.siteId);
    for (const id of r.logged) chain.add("acl", "log", id);
    const d = r.decisive;
    if (d?.action === "allow") {
      chain.add("acl", "allow", d.id);
      return TRUSTED;
    }
    if (d?.action === "block" || d?.action === "challenge") return this.#aclRefusal(d, req, chain);
    if (r.logged.length === 0) chain.add("acl", "pass");
    return undefined;
  }

  /**
   * The ACL once more when the body names a method the header checks could not see (a `_method`
   * field of a form, multipart or JSON body; `added` holds those methods): a block or challenge
   * rule that now decides because of one of them answers; any other outcome changes nothing.
   */
  aclBodyMethods(
    p: CompiledProtection,
    req: CheckRequest,
    chain: ChainSink,
    added: readonly string[],
  ): PreVerdict | undefined {
    if (p.acl.size === 0) return undefined;
    const d = p.acl.evaluate(req.view, req.ip, req.siteId).decisive;
    if (d === undefined || (d.action !== "block" && d.action !== "challenge")) return undefined;
    if (!d.conditions.methods?.some((m) => added.includes(m.toUpperCase()))) return undefined;
    return this.#aclRefusal(d, req, chain);
  }

  /** A deciding block or challenge rule's verdict (a challenge passes with a clearance). */
  #aclRefusal(d: AclRule, req: CheckRequest, chain: ChainSink): PreVerdict | undefined {
    if (d.action === "block") {
      chain.add("acl", "block", d.id);
      return { kind: "block", check: "acl", rule: d.id };
    }
    if (this.#hasClearance(req)) {
      chain.add("acl", "clearance", d.id);
      return undefined;
    }
    chain.add("acl", "challenge", d.id);
    return { kind: "challenge", check: "acl", rule: d.id, difficulty: DEFAULT_DIFFICULTY };
  }

  /** Threat-intelligence indicators: a block or challenge, or nothing. */
  threatIntel(
    p: CompiledProtection,
    req: CheckRequest,
    chain: ChainSink,
  ): PreVerdict | undefined {
    if (p.threat.size === 0 || !req.ip) return undefined;
    const hits = p.threat.lookup(req.ip);
    const decisive = hits.find((h) => h.action === "block") ??
      hits.find((h) => h.action === "challenge");
    for (const h of hits) if (h.action === "log") chain.add("threat_intel", "log", h.feedId);
    if (decisive?.action === "block") {
      chain.add("threat_intel", "block", decisive.feedId);
      return { kind: "block", check: "threat_intel", rule: decisive.feedId };
    }
    if (decisive?.action === "challenge") {
      if (this.#hasClearance(req)) {
        chain.add("threat_intel", "clearance", decisive.feedId);
        return undefined;
      }
      chain.add("threat_intel", "challenge", decisive.feedId);
      return {
        kind: "challenge",
        check: "threat_intel",
        rule: decisive.feedId,
        difficulty: DEFAULT_DIFFICULTY,
      };
    }
    if (hits.length === 0) chain.add("threat_intel", "pass");
    return undefined;
  }

  /** The bot policy of the request's path: a challenge, or nothing. */
  bot(p: CompiledProtection, req: CheckRequest, chain: ChainSink): PreVerdict | undefined {
    const bot = p.bot.length > 0 ? botPolicyFor(p, req.siteId, req.view.normalPath) : undefined;
    if (!bot || bot.mode === "off") return undefined;
    if (bot.verified_bots && req.verifiedBot) {
      chain.add("bot", "verified_bot", bot.id);
      return undefined;
    }
    const ua = req.view.header("user-agent");
    const reason = bot.mode === "all"
      ? "all"
      : classifyClient(ua, this.#limiters.overBotRate(bot, req));
    if (reason === undefined) chain.add("bot", "pass", bot.id);
    else if (this.#hasClearance(req)) chain.add("bot", "clearance", bot.id);
    else {
      chain.add("bot", `challenge:${reason}`, bot.id);
      return { kind: "challenge", check: "bot", rule: bot.id, difficulty: bot.difficulty };
    }
    return undefined;
  }

  /** The global rate limit: rate_limited, or nothing. */
  rateLimit(p: CompiledProtection, req: CheckRequest, chain: ChainSink): PreVerdict | undefined {
    if (!p.rateLimit.enabled) return undefined;
    const d = this.#limiters.global(p.rateLimit).hit(limiterKey(p.rateLimit, req), req.now);
    if (!d.allowed) {
      chain.add("rate_limit", "limited");
      return {
        kind: "rate_limited",
        retryAfterSeconds: Math.max(1, Math.ceil(d.retryAfterMs / 1000)),
      };
    }
    chain.add("rate_limit", "pass");
    return undefined;
  }

  /** Custom regex rules; every matching rule id enters the chain. */
  custom(p: CompiledProtection, req: CheckRequest, chain: ChainSink): RuleVerdict {
    if (p.custom.size === 0) return RULE_PASS;
    const r = p.custom.evaluate(req.view, req.siteId);
    const decisive = r.decisive;
    for (const id of r.matched) {
      if (id !== decisive?.id) chain.add("custom_rule", "log", id);
    }
    if (!decisive) {
      if (r.exhausted) {
        chain.add("custom_rule", "budget");
        return RULE_EXHAUSTED;
      }
      if (r.matched.length === 0) chain.add("custom_rule", "pass");
      return RULE_PASS;
    }
    if (decisive.action === "challenge" && this.#hasClearance(req)) {
      chain.add("custom_rule", "clearance", decisive.id);
      return RULE_PASS;
    }
    chain.add("custom_rule", decisive.action, decisive.id);
    return decisive.action === "challenge"
      ? { kind: "challenge", rule: decisive.id }
      : { kind: "block", rule: decisive.id };
  }

  /**
   * ALAP exceptions and signature blocks around the engine's verdict (see alap_enforce.ts);
   * the site and the request (its path and chain) are the transaction's own objects.
   */
  adjust(
    p: CompiledProtection,
    site: AlapSite,
    req: AlapRequest,
    inspection: Inspection,
  ): AlapAdjusted {
    return this.#alap.apply(p, site, req, inspection);
  }

  #hasClearance(req: CheckRequest): boolean {
    return this.#challenges.hasClearance(
      req.view.cookies,
      req.clientIp,
      req.view.header("user-agent") ?? "",
    );
  }
}
