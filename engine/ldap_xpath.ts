/**
 * LDAP filter and XPath query injection detector.
 *
 * Both languages are recognised by breakouts that close the application's expression and
 * open a new one: `*)(uid=*))(|(uid=*` rewrites an LDAP filter, `' or name()='x` and
 * `')] | //user/*` rewrite an XPath predicate. Lone `*` or `)` prove nothing and pass.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";
import { percentDecode } from "./normalize.ts";

/** Attributes that LDAP injection payloads target. */
const LDAP_ATTR =
  "(?:uid|cn|sn|mail|objectclass|userpassword|password|ou|dc|givenname|member|memberof|samaccountname|description|telephonenumber|homedirectory|displayname|name|accountname|userprincipalname)";
/** `)(attr=` or `)(|(attr=`: closing the filter and opening another on a known attribute. */
const LDAP_BREAKOUT = new RegExp(`\\)[\\s(|&!]*\\(\\s*[|&!]?\\s*${LDAP_ATTR}\\s*[~<>]?=`, "i");
/** `*)(` followed by a filter operator: a wildcard match closed and a composition opened. */
const LDAP_WILDCARD_CLOSE = /\*\)+\s*\(\s*[|&!(]/;
/** `(|(attr=*)` composition with a wildcard value. */
const LDAP_COMPOSITION = /\(\s*[|&!]\s*\(\s*[a-z][\w-]*\s*=\s*\*/i;
/** A wildcard value closed twice and cut with a NUL byte (`*))%00`). */
const LDAP_NUL = /\*\)\)(?:%00|\\x00|\\0)/i;
/**
 * A value made only of filter syntax - wildcard, parentheses and a boolean operator
 * (`*()|&'`): the probe that shows whether a filter is built by concatenation.
 */
const LDAP_PROBE = /^[\s*()|&!='"\\]{3,12}$/;
const LDAP_PROBE_PARTS = [/\*/, /[()]/, /[|&!]/] as const;

/** XPath functions applied to a node path (`count(/child::node())`, `name(/*)`). */
const XPATH_FUNC_PATH =
  /\b(?:count|name|local-name|string-length|substring|starts-with|contains|normalize-space|string|number|translate|concat)\s*\(\s*(?:\/|\.\.\/|@|\*\s*[,)])/i;
const XPATH_NAME_TEST = /['"]\s*(?:or|and)\s+(?:name|local-name|string-length|count)\s*\(/i;
const XPATH_UNION = /['"]?\s*\)?\s*\]\s*\|\s*\/\/?[\w*@]/;
const XPATH_AXIS =
  /\b(?:child|descendant|descendant-or-self|ancestor|ancestor-or-self|parent|following-sibling|preceding-sibling|following|preceding|attribute|self)::(?:node\(\)|\*|text\(\)|[a-z])/i;
const XPATH_MISC =
  /codepoints-to-string\s*\(|string-to-codepoints\s*\(|\bstring-length\s*\(\s*\w+\s*\)\s*[=<>]/i;

/**
 * Reports LDAP filter and XPath predicate breakouts.
 *
 * @param value the decoded input
 * @returns the strongest finding, class `ldap` or `xpath`
 */
export function ldapXpath(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  if (text.indexOf("(") < 0 && text.indexOf(")") < 0 && text.indexOf("::") < 0) return undefined;
  let best: Finding | undefined;
  if (text.indexOf(")") >= 0) {
    const br = LDAP_BREAKOUT.exec(text) ?? LDAP_WILDCARD_CLOSE.exec(text);
    if (br !== null) best = makeFinding(value, "ldap", 85, "ldap.filter_breakout", text, br.index);
    // The raw value still shows the `%00` the normaliser removed, once the transport's own
    // encoding is undone.
    const raw = value.raw.includes("%25") ? percentDecode(value.raw) : value.raw;
    const nul = LDAP_NUL.exec(raw);
    if (nul !== null) {
      best = stronger(best, makeFinding(value, "ldap", 75, "ldap.nul_cut", raw, nul.index));
    }
    if (LDAP_PROBE.test(text) && LDAP_PROBE_PARTS.every((part) => part.test(text))) {
      best = stronger(best, makeFinding(value, "ldap", 70, "ldap.syntax_probe", text, 0));
    }
  }
  const comp = LDAP_COMPOSITION.exec(text);
  if (comp !== null) {
    best = stronger(best, makeFinding(value, "ldap", 80, "ldap.composition", text, comp.index));
  }
  const xp = XPATH_NAME_TEST.exec(text) ?? XPATH_UNION.exec(text) ?? XPATH_FUNC_PATH.exec(text) ??
    XPATH_AXIS.exec(text) ?? XPATH_MISC.exec(text);
  if (xp !== null) {
    best = stronger(best, makeFinding(value, "xpath", 82, "xpath.injection", text, xp.index));
  }
  return best;
}
