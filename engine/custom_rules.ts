/**
 * Custom regular-expression rules: an operator's pattern against one part of the request,
 * compiled once with RE2 (linear time) when the policy is built.
 *
 * Rules run in ascending `priority` (ties keep creation order). Every matching rule is
 * reported; the first matching `block` or `challenge` rule decides, and `log` rules only
 * record that they matched.
 *
 * A rule's cost per request is bounded. Its pattern's program is at most `MAX_PROGRAM_SIZE`
 * instructions (refused when saved, see `re2_cost.ts`). What one character costs RE2 at worst
 * grows with the square of the program's size (a counted repetition of `n` makes states of up to
 * `n` positions, and up to `n` of them), so a rule's weight is {@link ruleWeight}: 1 for the
 * patterns rules are made of, about 1,000 for the largest allowed. A rule reads at most
 * {@link RULE_CALL_UNITS} / weight characters of each target (its prefix: all of any inspected
 * body for a light pattern, 16,384 characters for the largest), and every match is charged to the
 * request's rule budget (characters read times weight; {@link ruleBudgetFor}). When the budget has
 * no room for a match, the rules left are not run and the result says so (`exhausted`: the
 * request is flagged `inspection: budget`).
 */
import {
  checkRe2,
  compileRe2,
  holderOf,
  type Matcher,
  type RefusalReason,
  type RuleSetHolder,
  type SharedMatcher,
} from "./re2.ts";
import { foldedTwin } from "./path_match.ts";
import type { RequestView } from "./request_view.ts";
import type { EngineRequest } from "./types.ts";
import { requestSize, WorkBudget } from "./work_budget.ts";

/**
 * Work units one match may cost: a rule reads at most this many characters of a target divided
 * by its weight (16 MiB of text for a light pattern, the largest inspected body; 16,384
 * characters for a 1,000-instruction one).
 */
export const RULE_CALL_UNITS = 16 << 20;
/** Work units the custom rules of one request may spend at least... */
export const RULE_BUDGET = 16 << 20;
/** ...and per character of the request on top: every light rule over the whole body, four times. */
export const RULE_BUDGET_PER_CHAR = 4;

/**
 * What one character costs a rule, in units of a light pattern's character: `1 + size² / 1024`
 * for a program of `size` instructions (1 below 32 instructions, 10 at 100, 977 at 1,000).
 */
export function ruleWeight(size: number): number {
  return 1 + Math.floor((size * size) / 1024);
}

/** The rule budget of one request: {@link RULE_BUDGET} plus {@link RULE_BUDGET_PER_CHAR} a character. */
export function ruleBudgetFor(req: EngineRequest): number {
  return RULE_BUDGET + RULE_BUDGET_PER_CHAR * requestSize(req);
}

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
  /** What each character read costs ({@link ruleWeight}). */
  readonly weight: number;
  /** Characters of each target it reads at most. */
  readonly window: number;
}

/** The result of running the rules on one request. */
export interface CustomRulesResult {
  /** Ids of every rule that matched, in evaluation order. */
  readonly matched: readonly string[];
  /** The first matching block or challenge rule. */
  readonly decisive: CustomRule | undefined;
  /** True when the rule budget ran out: the rules after the last one run were not. */
  readonly exhausted?: true;
}

export interface CompiledCustomRules extends RuleSetHolder {
  readonly size: number;
  /**
   * Runs the rules that apply to `siteId` on the request.
   *
   * @param budget what the matches may cost (by default {@link ruleBudgetFor} the request)
   */
  evaluate(view: RequestView, siteId: string, budget?: WorkBudget): CustomRulesResult;
}

/** Checks a pattern as RE2 would compile it; the message is RE2's own. */
export function validatePattern(pattern: string, ignoreCase = false): string | undefined {
  return patternRefusal(pattern, ignoreCase)?.message;
}

/**
 * Why a pattern would not be saved: RE2 refuses its syntax, its program is too large
 * (`size`: over `MAX_PROGRAM_SIZE` instructions), or RE2's memory or pattern count is full.
 *
 * @returns undefined when it compiles
 */
export function patternRefusal(
  pattern: string,
  ignoreCase = false,
): { readonly reason: RefusalReason; readonly message: string } | undefined {
  return checkRe2(pattern, { ignoreCase });
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

/** The rules' matches on one request, each charged to the budget before it runs. */
class RuleRun {
  /** True once a match did not fit the budget. */
  out = false;

  constructor(public rule: CompiledRule, readonly budget: WorkBudget) {}

  /** Whether `matcher` matches the window of `value`; false (and out) when it cannot pay. */
  test(value: string, matcher: Matcher = this.rule.matcher): boolean {
    const { weight, window } = this.rule;
    const text = value.length > window ? value.slice(0, window) : value;
    if (!this.budget.spend(Math.max(1, text.length) * weight)) {
      this.out = true;
      return false;
    }
    return matcher.test(text);
  }

  matches(view: RequestView): boolean {
    const target = this.rule.rule.target;
    switch (target.kind) {
      case "path": {
        // The path as the site's upstream reads it (path_normalize.ts), and its other reading.
        const p = view.normalPath;
        const folded = this.rule.folded;
        const m = p.fold && folded !== undefined ? folded : this.rule.matcher;
        if (this.test(p.key, m)) return true;
        return p.alt !== undefined && !this.out && this.test(p.alt, m);
      }
      case "query": {
        // The query as sent, and decoded once.
        if (this.test(view.rawQuery)) return true;
        const decoded = view.decodedQuery;
        return decoded !== view.rawQuery && !this.out && this.test(decoded);
      }
      case "param":
        for (const [k, v] of view.params) {
          if (k === target.name && this.test(v)) return true;
          if (this.out) return false;
        }
        return false;
      case "any_param":
        for (const [, v] of view.params) {
          if (this.test(v)) return true;
          if (this.out) return false;
        }
        return false;
      case "header": {
        const value = view.header(target.name);
        return value !== undefined && this.test(value);
      }
      case "cookies":
        return this.test(view.cookies);
      case "body":
        return this.test(view.body);
    }
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
    const weight = ruleWeight(r.matcher.size);
    compiled.push({
      rule,
      matcher: r.matcher,
      folded,
      weight,
      window: Math.floor(RULE_CALL_UNITS / weight),
    });
  }
  return {
    ...holderOf(held),
    size: compiled.length,
    evaluate(
      view: RequestView,
      siteId: string,
      budget = new WorkBudget(ruleBudgetFor(view.req)),
    ): CustomRulesResult {
      let matched: string[] | undefined;
      let run: RuleRun | undefined;
      for (const c of compiled) {
        const rule = c.rule;
        if (rule.siteId !== null && rule.siteId !== siteId) continue;
        if (run === undefined) run = new RuleRun(c, budget);
        else run.rule = c;
        const hit = run.matches(view);
        if (run.out) return { matched: matched ?? [], decisive: undefined, exhausted: true };
        if (!hit) continue;
        (matched ??= []).push(rule.id);
        if (rule.action !== "log") return { matched, decisive: rule };
      }
      return matched ? { matched, decisive: undefined } : EMPTY;
    },
  };
}
