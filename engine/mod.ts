/**
 * Public API of the semantic inspection engine: pure functions over plain data.
 *
 * @example
 * ```ts
 * import { inspect } from "./mod.ts";
 * const result = inspect(
 *   { method: "GET", path: "/", query: "id=1%27%20or%201=1--", headers: [] },
 *   { level: "balanced" },
 * );
 * result.blocking?.ruleId; // "sqli.tautology"
 * ```
 */

export type * from "./types.ts";
export { ATTACK_CLASSES } from "./types.ts";
export { BLOCKING_BAND, inspect, InspectionRun } from "./inspect.ts";
export { BUDGET_PER_CHAR, DEFAULT_BUDGET, WorkBudget } from "./work_budget.ts";
export { extract } from "./extract.ts";
export { BodyTail, MAX_JUDGED_BODY, TAIL_WINDOW } from "./body_tail.ts";
export { bodyCharset, decodeBodyText } from "./charset.ts";
export { normalize } from "./normalize.ts";
export { sqli } from "./sqli.ts";
export { xss } from "./xss.ts";
