/**
 * ALAP (automatic learning attack protection), the pure part: turns what the data plane
 * observes into proposed decisions, and defines how a decision moves between statuses.
 *
 * - A client whose summed attack score on a site within `clientWindowMs` reaches
 *   `clientScoreThreshold` gets a site-scoped temporary block proposal. The same client over
 *   the threshold on `globalSites` different sites gets a global IP ban proposal.
 * - `signatureThreshold` high or critical findings with the same rule id on one site within
 *   `signatureWindowMs` give a site-level long-term block proposal for that signature.
 * - An administrator's false-positive mark gives an exception proposal.
 *
 * Site-scoped proposals backed by high or critical findings apply at once when the policy's
 * `autoApply` is on; global IP bans and exceptions always wait for an administrator. What the
 * caller says of the observation's client (`Observation.client`) narrows this: an exempt client
 * (loopback, the management listener's own, a trusted proxy) gets no client decision at all, a
 * client for review only (a private address) gets proposals that never auto-apply.
 * Memory is bounded: at most `maxTracked` clients and signatures are tracked (oldest first out).
 */

export type DecisionKind = "temp_block" | "ip_ban" | "signature_block" | "exception";
/** `rejected`: a proposal turned down; `revoked`: an applied decision withdrawn. */
export type DecisionStatus = "proposed" | "applied" | "rejected" | "revoked" | "expired";

export interface DecisionScope {
  /** `null` for a global decision. */
  readonly siteId: string | null;
}

export interface DecisionTarget {
  readonly clientIp?: string;
  readonly ruleId?: string;
  readonly pathPrefix?: string;
}

/**
 * Why a decision was proposed, as data (the console and the notifications make its text): a
 * client's summed score within the window, the number of sites it attacked, repeated findings
 * of one rule, or an administrator's false-positive mark.
 */
export type DecisionBasis =
  | { readonly kind: "score"; readonly score: number; readonly windowS: number }
  | { readonly kind: "sites"; readonly sites: number }
  | { readonly kind: "findings"; readonly count: number; readonly ruleId: string }
  | { readonly kind: "false_positive" };

/** A decision as the engine proposes it; the service stores it with an id. */
export interface Proposal {
  readonly key: string;
  readonly kind: DecisionKind;
  readonly scope: DecisionScope;
  readonly target: DecisionTarget;
  readonly evidence: readonly string[];
  /** The basis in English (stored with the decision; channels and logs read it). */
  readonly reason: string;
  readonly basis: DecisionBasis;
  readonly status: "proposed" | "applied";
  readonly createdAt: number;
  readonly expiresAt: number | null;
}

export interface AlapPolicy {
  readonly enabled: boolean;
  readonly autoApply: boolean;
  readonly clientWindowMs: number;
  readonly clientScoreThreshold: number;
  readonly tempBlockMs: number;
  readonly globalSites: number;
  readonly banMs: number;
  readonly signatureWindowMs: number;
  readonly signatureThreshold: number;
  readonly signatureBlockMs: number;
  readonly maxTracked: number;
}

export const DEFAULT_ALAP_POLICY: AlapPolicy = {
  enabled: true,
  autoApply: false,
  clientWindowMs: 5 * 60_000,
  clientScoreThreshold: 300,
  tempBlockMs: 60 * 60_000,
  globalSites: 2,
  banMs: 7 * 24 * 60 * 60_000,
  signatureWindowMs: 60 * 60_000,
  signatureThreshold: 20,
  signatureBlockMs: 30 * 24 * 60 * 60_000,
  maxTracked: 50_000,
};

/**
 * What ALAP may decide about a client: block it (applied at once where the policy allows),
 * only propose blocking it (never auto-applied), or never block it.
 */
export type ClientStanding = "auto" | "review" | "exempt";

/** One blocking or logged finding the data plane reports. */
export interface Observation {
  readonly siteId: string;
  readonly clientIp: string;
  /** What may be decided about the client (default `auto`). */
  readonly client?: ClientStanding;
  readonly traceId: string;
  readonly ruleId: string;
  readonly confidence: "low" | "medium" | "high" | "critical";
  readonly score: number;
  readonly time: number;
}

interface Window {
  events: Array<{ time: number; score: number; traceId: string }>;
  strong: boolean;
}

const MAX_EVIDENCE = 20;

function push(map: Map<string, Window>, key: string, o: Observation, max: number): Window {
  let w = map.get(key);
  if (w) map.delete(key);
  else {
    w = { events: [], strong: false };
    if (map.size >= max) map.delete(map.keys().next().value!);
  }
  map.set(key, w);
  w.events.push({ time: o.time, score: o.score, traceId: o.traceId });
  if (o.confidence === "high" || o.confidence === "critical") w.strong = true;
  return w;
}

function trim(w: Window, since: number): void {
  let i = 0;
  while (i < w.events.length && w.events[i]!.time < since) i++;
  if (i > 0) w.events.splice(0, i);
  if (w.events.length > 4 * MAX_EVIDENCE) w.events.splice(0, w.events.length - 4 * MAX_EVIDENCE);
}

const evidence = (w: Window): string[] => w.events.slice(-MAX_EVIDENCE).map((e) => e.traceId);

/** What a decision for one site says, besides its scope, evidence, status and times. */
interface SiteDecision {
  readonly key: string;
  readonly kind: DecisionKind;
  readonly target: DecisionTarget;
  /** How long it lasts from the observation. */
  readonly ttl: number;
  readonly reason: string;
  readonly basis: DecisionBasis;
  /** False when the decision may only be proposed (a client for review only). */
  readonly mayApply: boolean;
}

/** Tracks observations and proposes decisions; `isOpen(key)` skips keys already decided. */
export function createAlapTracker(policy: AlapPolicy, isOpen: (key: string) => boolean) {
  const clients = new Map<string, Window>();
  const signatures = new Map<string, Window>();
  const hotSites = new Map<string, Set<string>>();

  /** A decision for the observation's site, applied at once when auto-apply and `w` allow. */
  function siteDecision(o: Observation, w: Window, d: SiteDecision): Proposal {
    const auto = policy.autoApply && w.strong && d.mayApply;
    return {
      key: d.key,
      kind: d.kind,
      scope: { siteId: o.siteId },
      target: d.target,
      evidence: evidence(w),
      reason: d.reason,
      basis: d.basis,
      status: auto ? "applied" : "proposed",
      createdAt: o.time,
      expiresAt: o.time + d.ttl,
    };
  }

  return {
    observe(o: Observation): Proposal[] {
      if (!policy.enabled) return [];
      const out: Proposal[] = [];
      const standing = o.client ?? "auto";
      if (standing !== "exempt") clientDecisions(o, standing === "auto", out);
      if (o.confidence === "high" || o.confidence === "critical") {
        const sw = push(signatures, `${o.siteId}|${o.ruleId}`, o, policy.maxTracked);
        trim(sw, o.time - policy.signatureWindowMs);
        const key = `signature_block:${o.siteId}:${o.ruleId}`;
        if (sw.events.length >= policy.signatureThreshold && !isOpen(key)) {
          const count = sw.events.length;
          out.push(siteDecision(o, sw, {
            key,
            kind: "signature_block",
            target: { ruleId: o.ruleId },
            ttl: policy.signatureBlockMs,
            reason: `${count} high or critical findings of ${o.ruleId}`,
            basis: { kind: "findings", count, ruleId: o.ruleId },
            mayApply: true,
          }));
        }
      }
      return out;
    },
    tracked: (): number => clients.size + signatures.size,
  };

  /** The temporary block and the global ban of the observation's client, when they are due. */
  function clientDecisions(o: Observation, mayApply: boolean, out: Proposal[]): void {
    const cw = push(clients, `${o.siteId}|${o.clientIp}`, o, policy.maxTracked);
    trim(cw, o.time - policy.clientWindowMs);
    const total = cw.events.reduce((n, e) => n + e.score, 0);
    if (total >= policy.clientScoreThreshold) {
      const key = `temp_block:${o.siteId}:${o.clientIp}`;
      if (!isOpen(key)) {
        const windowS = policy.clientWindowMs / 1000;
        out.push(siteDecision(o, cw, {
          key,
          kind: "temp_block",
          target: { clientIp: o.clientIp },
          ttl: policy.tempBlockMs,
          reason: `attack score ${total} within ${windowS}s`,
          basis: { kind: "score", score: total, windowS },
          mayApply,
        }));
      }
      let sites = hotSites.get(o.clientIp);
      if (!sites) {
        if (hotSites.size >= policy.maxTracked) hotSites.delete(hotSites.keys().next().value!);
        hotSites.set(o.clientIp, sites = new Set());
      }
      sites.add(o.siteId);
      const banKey = `ip_ban:${o.clientIp}`;
      if (sites.size >= policy.globalSites && !isOpen(banKey)) {
        out.push({
          key: banKey,
          kind: "ip_ban",
          scope: { siteId: null },
          target: { clientIp: o.clientIp },
          evidence: evidence(cw),
          reason: `attacking ${sites.size} sites`,
          basis: { kind: "sites", sites: sites.size },
          status: "proposed",
          createdAt: o.time,
          expiresAt: o.time + policy.banMs,
        });
      }
    }
  }
}

export type AlapTracker = ReturnType<typeof createAlapTracker>;

/** A logged block an administrator marked as a false positive: its site, rule and request. */
export interface FalsePositive {
  readonly siteId: string;
  readonly ruleId: string;
  /** Limits the exception to paths under this prefix. */
  readonly pathPrefix?: string | undefined;
  readonly traceId: string;
}

/** An exception proposal for a logged block an administrator marked as a false positive. */
export function falsePositiveProposal(
  mark: FalsePositive,
  now: number,
  ttlMs: number | null,
): Proposal {
  const { siteId, ruleId, pathPrefix, traceId } = mark;
  return {
    key: `exception:${siteId}:${ruleId}:${pathPrefix ?? ""}`,
    kind: "exception",
    scope: { siteId },
    target: pathPrefix === undefined ? { ruleId } : { ruleId, pathPrefix },
    evidence: [traceId],
    reason: "marked as a false positive",
    basis: { kind: "false_positive" },
    status: "proposed",
    createdAt: now,
    expiresAt: ttlMs === null ? null : now + ttlMs,
  };
}

export type ReviewAction = "approve" | "reject" | "revoke";

/** The status after a review action, or the reason it is not allowed. */
export function review(
  current: DecisionStatus,
  action: ReviewAction,
): { ok: true; status: DecisionStatus } | { ok: false; message: string } {
  if (action === "approve" && current === "proposed") return { ok: true, status: "applied" };
  if (action === "reject" && current === "proposed") return { ok: true, status: "rejected" };
  if (action === "revoke" && current === "applied") return { ok: true, status: "revoked" };
  return { ok: false, message: `Cannot ${action} a decision that is "${current}"` };
}

/** True when a proposed or applied decision has passed its expiry. */
export function isExpired(
  d: { status: DecisionStatus; expiresAt: number | null },
  now: number,
): boolean {
  return (d.status === "proposed" || d.status === "applied") && d.expiresAt !== null &&
    d.expiresAt <= now;
}
