/**
 * The class of an access-log record, derived when it is read (the request path does no work for
 * it): for a blocked or challenged request the check that decided (`ip_list`, `custom_rule`,
 * `rate_limit`, ...) or, when the semantic engine decided, its attack class (`sqli`, ...); for
 * the rest the finding's class, if any. The dashboard counts blocks by the same function, so the
 * attack log and the dashboard always name a block alike (docs/access-logs.md#the-class).
 */
import { ATTACK_CLASSES } from "../../engine/types.ts";
import type { Action, CheckEntry, FindingRecord } from "./record.ts";

/** What the class is read from: any record, as the data plane builds it or as the store returns it. */
export interface ClassSource {
  readonly action: Action | string;
  readonly chain: readonly Pick<CheckEntry, "check">[];
  readonly finding: Pick<FindingRecord, "class"> | null;
}

/**
 * The checks whose name is a record's class when they decide (every chain entry that can end a
 * request with a block or a challenge), in the order the data plane runs them.
 */
export const DECIDING_CHECKS = [
  "framing",
  "ip_list",
  "alap",
  "acl",
  "threat_intel",
  "bot",
  "rate_limit",
  "api_rate_limit",
  "api_auth",
  "api_schema",
  "body_limit",
  "custom_rule",
  "engine",
  "upstream",
  "other",
] as const;

/** Every class a record can have: the engine's attack classes, then the deciding checks. */
export const RECORD_CLASSES: readonly string[] = [
  ...ATTACK_CLASSES,
  ...DECIDING_CHECKS.filter((c) => !(ATTACK_CLASSES as readonly string[]).includes(c)),
];

/**
 * The record's class: the deciding check of a block or challenge (the engine's attack class when
 * the engine decided; `other` without a chain), else the finding's class or null.
 */
export function recordClass(r: ClassSource): string | null {
  if (r.action === "block" || r.action === "challenge") {
    const last = r.chain[r.chain.length - 1];
    if (last === undefined) return "other";
    if (last.check === "engine") return r.finding?.class ?? "engine";
    return last.check;
  }
  return r.finding?.class ?? null;
}
