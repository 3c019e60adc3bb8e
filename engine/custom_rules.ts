/**
 * Custom regular-expression rules: an operator's pattern against one part of the request,
 * compiled once with RE2 (linear time) when the policy is built.
 *
 * Rules run in ascending `priority` (ties keep creation order). Every matching rule is
 * reported; the first matching `block` or `challenge` rule decides, and `log` rules only
 * record that they matched.
 */
import {
  checkRe2,
  compileRe2,
  holderOf,
  type Matcher,
  type RuleSetHolder,
  type SharedMatcher,
} from "./re2.ts";
import { foldedTwin } from "./path_match.ts";
import { testPath } from "./path_normalize.ts";
import type { RequestView } from "./request_view.ts";

export type CustomTarget =
  | { readonly kind: "path" }
  | { readonly kind: "query" }
  | { readonly kind: "param"; readonly name: string }
  | { readonly kind: "any_param" }
  | { readonly kind: "header"; readonly name: string }
  | { readonly kind: "cookies" }
  | { readonly kind: "body" };

export type CustomAction = "block" | "log" | "challenge";

/** A rule as stored and edited. */
export interface CustomRule {
  readonly id: string;
  readonly name: string;
  /** `null` for a global rule. */
  readonly siteId: string | null;
  readonly target: CustomTarget;
  readonly pattern: string;
  readonly ignoreCase: boolean;
  readonly action: CustomAction;
  readonly priority: number;
  readonly enabled: boolean;
}

interface CompiledRule {
  readonly rule: CustomRule;
  readonly matcher: Matcher;
  /** A `path` rule's case-insensitive twin, for sites whose upstream folds case (path_match.ts). */
  readonly folded: Matcher | undefined;
}

/** The result of running the rules on one request. */
export interface CustomRulesResult {
  /** Ids of every rule that matched, in evaluation order. */
  readonly matched: readonly string[];
  /** The first matching block or challenge rule. */
  readonly decisive: CustomRule | undefined;
}

export interface CompiledCustomRules extends RuleSetHolder {
  readonly size: number;
  evaluate(view: RequestView, siteId: string): CustomRulesResult;
}

/** Checks a pattern as RE2 would compile it; the message is RE2's own. */
export function validatePattern(pattern: string, ignoreCase = false): string | undefined {
  return checkRe2(pattern, { ignoreCase })?.message;
}

/** Tries `pattern` on each sample, as a custom rule would (for the console's regex tester). */
export function testPattern(
  pattern: string,
  ignoreCase: boolean,
  samples: readonly string[],
): { valid: true; matches: boolean[] } | { valid: false; error: string } {
  const r = compileRe2(pattern, { ignoreCase });
  if (!r.ok) return { valid: false, error: r.message };
  try {
    return { valid: true, matches: samples.map((s) => r.matcher.test(s)) };
  } finally {
    r.matcher.release();
  }
}

function targetMatches(c: CompiledRule, target: CustomTarget, view: RequestView): boolean {
  const m = c.matcher;
  switch (target.kind) {
    case "path":
      return testPath(view.normalPath, m, c.folded);
    case "query": {
      if (m.test(view.rawQuery)) return true;
      const decoded = view.decodedQuery;
      return decoded !== view.rawQuery && m.test(decoded);
    }
    case "param":
      for (const [k, v] of view.params) if (k === target.name && m.test(v)) return true;
      return false;
    case "any_param":
      for (const [, v] of view.params) if (m.test(v)) return true;
      return false;
    case "header": {
      const value = view.header(target.name);
      return value !== undefined && m.test(value);
    }
    case "cookies":
      return m.test(view.cookies);
    case "body":
      return m.test(view.body);
  }
}

const EMPTY: CustomRulesResult = { matched: [], decisive: undefined };

/**
 * Compiles the enabled rules. A rule whose pattern does not compile, or no longer fits RE2's
 * memory, is skipped (the API refuses such patterns at write time, so this only guards a
 * hand-edited store or a budget filled since).
 */
export function compileCustomRules(rules: readonly CustomRule[]): CompiledCustomRules {
  const compiled: CompiledRule[] = [];
  const held: SharedMatcher[] = [];
  const ordered = rules
    .map((rule, index) => ({ rule, index }))
    .filter((r) => r.rule.enabled)
    .sort((a, b) => a.rule.priority - b.rule.priority || a.index - b.index);
  for (const { rule } of ordered) {
    const r = compileRe2(rule.pattern, { ignoreCase: rule.ignoreCase });
    if (!r.ok) continue;
    held.push(r.matcher);
    const folded = rule.target.kind === "path" && !rule.ignoreCase
      ? foldedTwin(rule.pattern, held)
      : undefined;
    compiled.push({ rule, matcher: r.matcher, folded });
  }
  return {
    ...holderOf(held),
    size: compiled.length,
    evaluate(view: RequestView, siteId: string): CustomRulesResult {
      let matched: string[] | undefined;
      for (const c of compiled) {
        const rule = c.rule;
        if (rule.siteId !== null && rule.siteId !== siteId) continue;
        if (!targetMatches(c, rule.target, view)) continue;
        (matched ??= []).push(rule.id);
        if (rule.action !== "log") return { matched, decisive: rule };
      }
      return matched ? { matched, decisive: undefined } : EMPTY;
    },
  };
}
