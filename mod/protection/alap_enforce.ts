/**
 * Enforcement of applied ALAP decisions around the semantic engine's verdict: an exception
 * drops its rule's findings on its site (and path prefix), the next finding that blocks at the
 * site's level deciding instead; a signature block makes any
 * finding of its rule block, whatever the site's level. (Temporary blocks and IP bans are
 * enforced earlier, with the IP lists.)
 */
import { blocksAt } from "../../engine/inspect.ts";
import { type NormalPath, underPrefix } from "../../engine/path_normalize.ts";
import type { Finding, Inspection, Level } from "../../engine/types.ts";
import type { AppliedDecision, CompiledProtection } from "./protection_compile.ts";

/**
 * A `.` or `..` segment, spelled raw or percent-encoded, between slashes (or backslashes, which
 * IIS and others read as slashes, raw or encoded): the upstream resolves it, so the path the
 * request names is not the one it reaches.
 */
const DOT_SEGMENT = /(?:^|[/\\]|%2f|%5c)(?:\.|%2e){1,2}(?:[/\\;]|%2f|%5c|$)/i;

export interface AlapAdjusted {
  readonly blocking: Finding | undefined;
  /** The signature-block decision that made the request block, if any. */
  readonly decision: string | undefined;
  /**
   * The findings without the excepted rules' (what ALAP observes: a request an exception lets
   * through must not count toward a temporary block or a signature block of that rule).
   */
  readonly findings: readonly Finding[];
}

/** The site a verdict was reached for: its id and protection level (a compiled site is one). */
export interface AlapSite {
  readonly id: string;
  readonly level: Level;
}

/** The request: its path and evaluation chain (the data-plane transaction is one). */
export interface AlapRequest {
  /** The path as sent. */
  readonly path: string;
  /** The path as the site's upstream reads it (path_normalize.ts). */
  readonly view: { readonly normalPath: NormalPath };
  readonly chain: { add(check: string, result: string, rule?: string): void };
}

/** Applies the compiled ALAP decisions live at the clock's time (read once per verdict). */
export class AlapEnforcer {
  readonly #clock: { now(): number };

  constructor(clock: { now(): number }) {
    this.#clock = clock;
  }

  apply(
    p: CompiledProtection,
    site: AlapSite,
    req: AlapRequest,
    inspection: Inspection,
  ): AlapAdjusted {
    const { id: siteId, level } = site;
    const { path, chain } = req;
    const now = this.#clock.now();
    let blocking = inspection.blocking;
    let findings = inspection.findings;
    const live = (d: AppliedDecision) =>
      (d.siteId === null || d.siteId === siteId) && (d.expiresAt === null || d.expiresAt > now);
    if (p.alapExceptions.length > 0 && findings.length > 0) {
      // The prefix is judged on the normalised path; a path sent with a dot segment is under no
      // prefix at all (/search/../tickets/x may reach a handler of /search on some upstream).
      const normal = req.view.normalPath;
      const under = (prefix: string) => underPrefix(normal, prefix) && !DOT_SEGMENT.test(path);
      const excepted = (f: Finding) =>
        p.alapExceptions.find((e) =>
          live(e) && e.ruleId === f.ruleId &&
          (e.pathPrefix === undefined || under(e.pathPrefix))
        );
      if (findings.some((f) => excepted(f) !== undefined)) {
        findings = findings.filter((f) => excepted(f) === undefined);
      }
      const hit = blocking && excepted(blocking);
      if (hit) {
        chain.add("alap", "exception", hit.id);
        // Only that rule's findings drop: another rule's finding that blocks at the site's
        // level still blocks (an upload exception for `rce.script_upload` does not let an SQL
        // injection in the form's other fields through).
        blocking = inspection.findings.find((f) =>
          blocksAt(f.confidence, level) && excepted(f) === undefined
        );
      }
    }
    if (!blocking && p.alapSignatures.length > 0) {
      for (const f of inspection.findings) {
        const sig = p.alapSignatures.find((s) => live(s) && s.ruleId === f.ruleId);
        if (sig) {
          chain.add("alap", "block", sig.id);
          return { blocking: f, decision: sig.id, findings };
        }
      }
    }
    return { blocking, decision: undefined, findings };
  }
}
