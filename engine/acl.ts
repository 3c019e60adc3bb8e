/**
 * Ordered ACL rules: conditions on method, path, host, header, query parameter, client address
 * and country, with actions allow, block, challenge and log. Compiled once per policy.
 *
 * Every condition present in a rule must hold. Rules run in their stored order; `log` rules
 * record a match and evaluation continues; the first `allow`, `block` or `challenge` rule
 * decides. A country condition needs a GeoIP lookup: without one it never matches (and the
 * management API refuses to store it, so this only guards a hand-edited store).
 */
import { type Cidr, cidrContains, type IpAddress, parseCidr } from "./ip_address.ts";
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
import { testPath, underPrefix } from "./path_normalize.ts";
import type { RequestView } from "./request_view.ts";

export type AclAction = "allow" | "block" | "challenge" | "log";

/** A value condition: present, or matching a pattern (RE2), on a header or query parameter. */
export interface NamedCondition {
  readonly name: string;
  /** When absent the condition only requires the header or parameter to be present. */
  readonly pattern?: string;
}

export interface AclConditions {
  readonly methods?: readonly string[];
  readonly path?: { readonly prefix: string } | { readonly regex: string };
  /** Exact host names, or `*.example.com` for any subdomain. */
  readonly hosts?: readonly string[];
  readonly header?: NamedCondition;
  readonly query?: NamedCondition;
  readonly cidrs?: readonly string[];
  /** ISO 3166-1 alpha-2 codes, upper case. */
  readonly countries?: readonly string[];
}

export interface AclRule {
  readonly id: string;
  readonly name: string;
  readonly siteId: string | null;
  readonly enabled: boolean;
  readonly action: AclAction;
  readonly conditions: AclConditions;
}

/** Maps an address to its country code; provided when a GeoIP database is configured. */
export interface GeoLookup {
  country(ip: IpAddress): string | undefined;
}

type Test = (view: RequestView, ip: IpAddress | undefined) => boolean;

interface CompiledAcl {
  readonly rule: AclRule;
  readonly tests: readonly Test[];
}

export interface AclResult {
  /** Ids of the `log` rules that matched before the decision. */
  readonly logged: readonly string[];
  readonly decisive: AclRule | undefined;
}

export interface CompiledAclRules extends RuleSetHolder {
  readonly size: number;
  evaluate(view: RequestView, ip: IpAddress | undefined, siteId: string): AclResult;
}

/**
 * Returns the first problem of a rule's conditions (an RE2 message, with RE2's reason, or a
 * bad network).
 */
export function validateAclConditions(
  c: AclConditions,
): { field: string; message: string; reason?: RefusalReason } | undefined {
  if (c.path && "regex" in c.path) {
    const r = checkRe2(c.path.regex);
    if (r) return { field: "conditions.path.regex", message: r.message, reason: r.reason };
  }
  for (const key of ["header", "query"] as const) {
    const p = c[key]?.pattern;
    if (p !== undefined) {
      const r = checkRe2(p);
      if (r) return { field: `conditions.${key}.pattern`, message: r.message, reason: r.reason };
    }
  }
  for (const [i, text] of (c.cidrs ?? []).entries()) {
    if (!parseCidr(text)) {
      return { field: `conditions.cidrs[${i}]`, message: `Invalid address or network: "${text}"` };
    }
  }
  return undefined;
}

/** Compiles for a rule set, adding the matcher to what the set holds. */
function matcherOrNever(pattern: string, held: SharedMatcher[]): Matcher | undefined {
  const r = compileRe2(pattern);
  if (!r.ok) return undefined;
  held.push(r.matcher);
  return r.matcher;
}

function hostTest(hosts: readonly string[]): Test {
  const exact = new Set(hosts.filter((h) => !h.startsWith("*.")).map((h) => h.toLowerCase()));
  const suffixes = hosts.filter((h) => h.startsWith("*.")).map((h) => h.slice(1).toLowerCase());
  return (view) => exact.has(view.host) || suffixes.some((s) => view.host.endsWith(s));
}

function namedTest(
  held: SharedMatcher[],
  cond: NamedCondition,
  values: (view: RequestView, name: string) => Iterable<string>,
): Test {
  const m = cond.pattern === undefined ? undefined : matcherOrNever(cond.pattern, held);
  if (cond.pattern !== undefined && !m) return () => false;
  return (view) => {
    for (const v of values(view, cond.name)) if (!m || m.test(v)) return true;
    return false;
  };
}

function* headerValues(view: RequestView, name: string): Iterable<string> {
  for (const [k, v] of view.req.headers) if (k === name) yield v;
}

function* queryValues(view: RequestView, name: string): Iterable<string> {
  for (const [k, v] of view.query) if (k === name) yield v;
}

/**
 * The method condition. The request's methods are its own and those its overrides name
 * (`RequestView.methods`, in capitals, so a client's `delete` does not slip past a DELETE rule):
 * a rule that refuses or records matches when any of them is listed, an allow rule only when
 * every one is, so an override can neither escape a block nor borrow an allowance.
 */
function methodTest(listed: readonly string[], action: AclAction): Test {
  const methods = new Set(listed.map((m) => m.toUpperCase()));
  const has = (m: string) => methods.has(m);
  return action === "allow" ? (view) => view.methods.every(has) : (view) => view.methods.some(has);
}

function compileConditions(
  c: AclConditions,
  action: AclAction,
  geo: GeoLookup | undefined,
  held: SharedMatcher[],
): Test[] {
  const tests: Test[] = [];
  if (c.methods?.length) tests.push(methodTest(c.methods, action));
  if (c.path) {
    // The normalised path, as the site's upstream reads it (path_normalize.ts).
    if ("prefix" in c.path) {
      const prefix = c.path.prefix;
      tests.push((view) => underPrefix(view.normalPath, prefix));
    } else {
      const m = matcherOrNever(c.path.regex, held);
      const folded = m ? foldedTwin(c.path.regex, held) : undefined;
      tests.push(m ? (view) => testPath(view.normalPath, m, folded) : () => false);
    }
  }
  if (c.hosts?.length) tests.push(hostTest(c.hosts));
  if (c.header) {
    tests.push(namedTest(held, { ...c.header, name: c.header.name.toLowerCase() }, headerValues));
  }
  if (c.query) tests.push(namedTest(held, c.query, queryValues));
  if (c.cidrs?.length) {
    const nets = c.cidrs.map(parseCidr).filter((n): n is Cidr => n !== undefined);
    tests.push((_view, ip) => ip !== undefined && nets.some((n) => cidrContains(n, ip)));
  }
  if (c.countries?.length) {
    const codes = new Set(c.countries.map((x) => x.toUpperCase()));
    tests.push((_view, ip) => {
      if (!geo || !ip) return false;
      const cc = geo.country(ip);
      return cc !== undefined && codes.has(cc);
    });
  }
  return tests;
}

const NO_MATCH: AclResult = { logged: [], decisive: undefined };

/** Compiles enabled rules in the given order; cheap conditions (method, prefix) run first. */
export function compileAcl(rules: readonly AclRule[], geo?: GeoLookup): CompiledAclRules {
  const held: SharedMatcher[] = [];
  const compiled: CompiledAcl[] = rules
    .filter((r) => r.enabled)
    .map((rule) => ({ rule, tests: compileConditions(rule.conditions, rule.action, geo, held) }));
  return {
    ...holderOf(held),
    size: compiled.length,
    evaluate(view, ip, siteId): AclResult {
      let logged: string[] | undefined;
      for (const { rule, tests } of compiled) {
        if (rule.siteId !== null && rule.siteId !== siteId) continue;
        if (!tests.every((t) => t(view, ip))) continue;
        if (rule.action === "log") {
          (logged ??= []).push(rule.id);
          continue;
        }
        return { logged: logged ?? [], decisive: rule };
      }
      return logged ? { logged, decisive: undefined } : NO_MATCH;
    },
  };
}
