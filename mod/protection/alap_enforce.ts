/**
 * Enforcement of applied ALAP decisions around the semantic engine's verdict: an exception
 * drops its rule's blocking finding on its site (and path prefix); a signature block makes any
 * finding of its rule block, whatever the site's level. (Temporary blocks and IP bans are
 * enforced earlier, with the IP lists.)
 */
import type { Finding, Inspection } from "../../engine/types.ts";
import type { AppliedDecision, CompiledProtection } from "./protection_compile.ts";

export interface AlapAdjusted {
  readonly blocking: Finding | undefined;
  /** The signature-block decision that made the request block, if any. */
  readonly decision: string | undefined;
}

export function applyAlap(
  p: CompiledProtection,
  siteId: string,
  path: string,
  inspection: Inspection,
  chain: { add(check: string, result: string, rule?: string): void },
  now: number,
): AlapAdjusted {
  let blocking = inspection.blocking;
  const live = (d: AppliedDecision) =>
    (d.siteId === null || d.siteId === siteId) && (d.expiresAt === null || d.expiresAt > now);
  if (blocking && p.alapExceptions.length > 0) {
    const rule = blocking.ruleId;
    const hit = p.alapExceptions.find((e) =>
      live(e) && e.ruleId === rule && (e.pathPrefix === undefined || path.startsWith(e.pathPrefix))
    );
    if (hit) {
      chain.add("alap", "exception", hit.id);
      blocking = undefined;
    }
  }
  if (!blocking && p.alapSignatures.length > 0) {
    for (const f of inspection.findings) {
      const sig = p.alapSignatures.find((s) => live(s) && s.ruleId === f.ruleId);
      if (sig) {
        chain.add("alap", "block", sig.id);
        return { blocking: f, decision: sig.id };
      }
    }
  }
  return { blocking, decision: undefined };
}
