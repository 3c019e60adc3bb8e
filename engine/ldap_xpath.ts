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
import { gated } from "./literal_gate.ts";
import { ldapAccountValue } from "./ldap_account.ts";

/** Attributes that LDAP injection payloads target. */
const LDAP_ATTR =
  "(?:uid|cn|sn|mail|objectclass|userpassword|password|ou|dc|givenname|member|memberof|samaccountname|description|telephonenumber|homedirectory|displayname|name|accountname|userprincipalname)";
/**
 * `)(attr=` or `)(|(attr=`: closing the filter and opening another on a known attribute. Spaces
 * around the operator are one run each (`\s*[|&!]?\s*` made `)(` and spaces quadratic).
 */
const LDAP_BREAKOUT = new RegExp(
  `\\)[\\s(|&!]*\\(\\s*(?:[|&!]\\s*)?${LDAP_ATTR}\\s*[~<>]?=`,
  "i",
);
/**
 * An attribute description of RFC 4515 (`cn`, `userPassword;binary`, the numeric OID
 * `2.5.4.3`, or the `1` of `(1=0)`) and a filter type: `=`, `~=`, `>=`, `<=`, or an extensible
 * match (`:dn:=`, `:1.2.840.113556.1.4.803:=`, `:caseExactMatch:=`; a rule is an OID or a
 * name ending in `Match`, so Pascal's and Python's `:=` are not read as one).
 */
const ATTR = String.raw`(?:[a-z][\w-]*|\d+(?:\.\d+)*)(?:;[\w-]+)*`;
const MATCHING_RULE = String.raw`(?:\d+(?:\.\d+)+|[a-z][\w-]*match)`;
const FILTER_TYPE = String.raw`(?:[~<>]?=|(?::dn)?(?::${MATCHING_RULE})?:=)`;
/** An item opened on any attribute: `(employeeNumber=`, `(1=0`, `(uac:1.2.840.113556.1.4.803:=`. */
const ITEM = String.raw`\(\s*${ATTR}\s*${FILTER_TYPE}`;
/**
 * Composition right after a closing parenthesis: `)(|(anyAttr=`, `)(&(1=0`, or the absolute
 * filters of RFC 4526 `)(&)` and `)(|)` (always true, always false); `)(!)` is prose's
 * "(sic)(!)". A negation follows the close at once: `#define OFF(x) (!(x = 0))` is C. Read
 * from the last `)` of a run (`))(|(x=`), so a run of `)` costs linear time.
 */
const LDAP_OPERATOR_BREAKOUT = new RegExp(
  String
    .raw`\)(?:\s*\(\s*(?:[&|]\s*(?:${ITEM}|\(\s*[&|!])|[&|]\s*\))|\(\s*!\s*(?:${ITEM}|\(\s*[&|!]))`,
  "i",
);
/**
 * A wildcard value closed and a new item opened on any attribute: `*)(employeeNumber=*`. A star
 * that repeats a regular expression's `.`, `]` or `\w` (`(.*)(id=\d+)` in a log search) is no
 * wildcard.
 */
const LDAP_WILDCARD_ITEM = gated(
  new RegExp(
    String.raw`(?<![.\]]|\\[a-z])\*[\s)]*\)\s*${ITEM}`,
    "i",
  ),
);
/**
 * A value that closes a filter it never opened and opens another: `admin)(&)`,
 * `admin))(|(status=active`, `x)(!(&(1=0`. Text closes only parentheses it opened, or a list
 * item or an emoticon: `b) (x=3)`, `1) (n=5) patients`, `:) (edit=typo)`, so a lone item must
 * open right at the close (`x)(cn=admin`).
 */
const LDAP_LEADING_BREAKOUT = new RegExp(
  String
    .raw`^[^()]{0,128}\)(?:[\s)]*\(\s*(?:[&|]\s*[()]|!\s*\()|\)*\(\s*${ATTR}\s*${FILTER_TYPE})`,
  "i",
);
/** `*)(` followed by a filter operator: a wildcard match closed and a composition opened. */
const LDAP_WILDCARD_CLOSE = gated(/\*\)+\s*\(\s*[|&!(]/);
/** `(|(attr=*)` composition with a wildcard value. */
const LDAP_COMPOSITION = /\(\s*[|&!]\s*\(\s*[a-z][\w-]*\s*=\s*\*/i;
/** An and/or list whose first item is whole, on any attribute: `(&(objectClass=user)`. */
const LDAP_LIST = new RegExp(String.raw`\(\s*[&|]\s*${ITEM}[^()]*\)`, "i");
/** A whole extensible-match item: `(userAccountControl:1.2.840.113556.1.4.803:=2)`. */
const LDAP_EXTENSIBLE = new RegExp(
  String.raw`\(\s*(?:${ATTR})?(?::dn)?:(?:dn|${MATCHING_RULE}):=[^()]*\)`,
  "i",
);
/**
 * What every breakout above has: a parenthesis closed and another opened. Only the last `)` of a
 * run is read (a class holding `)` or `(` made a run of `)` cost quadratic time).
 */
const CLOSE_OPEN = /\)[\s|&!]*\(/;
/** What every composition above starts with: `(&(`, `(|(`, `(!(`. */
const OPEN_OPERATOR = /\(\s*[|&!]\s*\(/;
/**
 * A wildcard value closed and cut with a NUL byte (`*))%00`, `*)%00`): the C string ends there,
 * so what the application appends to the filter is never read.
 */
const LDAP_NUL = gated(/\*\)+(?:%00|\\x00|\\0)/i);
/**
 * A value made only of filter syntax - wildcard, parentheses and a boolean operator
 * (`*()|&'`): the probe that shows whether a filter is built by concatenation.
 */
const LDAP_PROBE = /^[\s*()|&!='"\\]{3,12}$/;
const LDAP_PROBE_PARTS = [/\*/, /[()]/, /[|&!]/] as const;

/**
 * XPath functions applied to a node path (`count(/child::node())`, `name(/*)`). A bare `*` is
 * a path for every function but `count`: `count(*)` is SQL's row count (`having count(*) > 1`
 * in a search, an ORM's statement in a telemetry breadcrumb) far more often than XPath's.
 */
const XPATH_FUNC_PATH = gated(
  /\b(?:count|name|local-name|string-length|substring|starts-with|contains|normalize-space|string|number|translate|concat)\s*\(\s*(?:\/|\.\.\/|@)|\b(?:name|local-name|string-length|substring|starts-with|contains|normalize-space|string|number|translate|concat)\s*\(\s*\*\s*[,)]/i,
);
/**
 * A quote closed and a condition on a node function joined: `' or substring(//u/p,1,1)='a`.
 * Functions named like English words (`last`, `position`, `string`, `doc`, `contains`) open
 * their parenthesis at once: `my parents' and last (2023) trip` is prose.
 */
const XPATH_NAME_TEST =
  /['"]\s*(?:or|and)\s+(?:not\s*\(\s*)?(?:(?:name|local-name|string-length|count)\s*\(|(?:namespace-uri|substring(?:-before|-after)?|starts-with|ends-with|contains|matches|string|normalize-space|translate|lower-case|upper-case|position|last|boolean|doc-available|doc|concat|codepoints-to-string|string-to-codepoints)\()/i;
/** XPath 2.0 and XQuery functions that fetch a URL: `doc('http://...')`, out of band. */
const XPATH_FETCH = gated(
  /\b(?:doc|doc-available|unparsed-text(?:-lines|-available)?|collection)\s*\(\s*(?:concat\s*\(\s*)?['"]\s*(?:https?|ftp|file|gopher):/i,
);
/**
 * A predicate closed and a union opened: `')] | //user/*`, `[1]|//*`. Without a quote the
 * union must select from the root of the document (`//`): `| [x] | /usr/bin |` is a table row,
 * and with spaces around the bar only `//*` is read: `| jQuery [3.7] | //code.jquery.com/x.js |`
 * is a table row too, and `arr[0] | //comment` code. (`\s*(?:\)\s*)?`: a quote and spaces
 * cost linear time, which `\s*\)?\s*` did not.)
 */
const XPATH_UNION = gated(
  /['"]\s*(?:\)\s*)?\]\s*\|\s*\/\/?[\w*@]|\](?:\|\/\/[\w*@]|\s*\|\s*\/\/\*)/,
);
const XPATH_AXIS = gated(
  /\b(?:child|descendant|descendant-or-self|ancestor|ancestor-or-self|parent|following-sibling|preceding-sibling|following|preceding|attribute|self)::(?:node\(\)|\*|text\(\)|[a-z])/i,
);
const XPATH_MISC = gated(
  /codepoints-to-string\s*\(|string-to-codepoints\s*\(|\bstring-length\s*\(\s*\w+\s*\)\s*[=<>]/i,
);

/**
 * Reports LDAP filter and XPath predicate breakouts.
 *
 * @param value the decoded input
 * @returns the strongest finding, class `ldap` or `xpath`
 */
export function ldapXpath(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  let best = stronger(escapedLdap(value, text), ldapAccountValue(value));
  if (
    text.indexOf("(") < 0 && text.indexOf(")") < 0 && text.indexOf("::") < 0 &&
    text.indexOf("]") < 0
  ) {
    return best;
  }
  best = stronger(best, ldap(value, text));
  const xp = XPATH_NAME_TEST.exec(text) ?? XPATH_UNION.exec(text) ?? XPATH_FUNC_PATH.exec(text) ??
    XPATH_AXIS.exec(text) ?? XPATH_MISC.exec(text) ??
    (text.indexOf("'") >= 0 || text.indexOf('"') >= 0 ? XPATH_FETCH.exec(text) : null);
  if (xp !== null) {
    best = stronger(best, makeFinding(value, "xpath", 82, "xpath.injection", text, xp.index));
  }
  return best;
}

/** LDAP filter breakouts and compositions in `text`. */
function ldap(value: DetectorInput, text: string): Finding | undefined {
  let best: Finding | undefined;
  if (text.indexOf(")") >= 0) {
    // One scan decides whether any breakout can match: each closes and reopens (`)(`, `)|(`).
    const at = CLOSE_OPEN.test(text) ? breakout(text) : -1;
    if (at >= 0) best = makeFinding(value, "ldap", 85, "ldap.filter_breakout", text, at);
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
  const comp =
    (OPEN_OPERATOR.test(text) ? LDAP_COMPOSITION.exec(text) ?? LDAP_LIST.exec(text) : null) ??
      (text.indexOf(":=") >= 0 ? LDAP_EXTENSIBLE.exec(text) : null);
  if (comp !== null) {
    best = stronger(best, makeFinding(value, "ldap", 80, "ldap.composition", text, comp.index));
  }
  return best;
}

/** The breakouts read anywhere in a value, in the order they are tried. */
const BREAKOUTS = [
  LDAP_BREAKOUT,
  LDAP_WILDCARD_CLOSE,
  LDAP_OPERATOR_BREAKOUT,
  LDAP_WILDCARD_ITEM,
] as const;
/** Matches of one rule read past before giving up (each costs one pass over the value). */
const BREAKOUT_TRIES = 8;

/**
 * Where a breakout starts, or -1. A breakout closes a parenthesis the application opened: one the
 * value opened itself is the value's own grouping, so C's casts and function pointers
 * (`memcpy((char *)(&hdr), ...)`, `void (*)(int)`) and a regular expression's `(.*)(x=1)` are read
 * past, and a later match in the same value is tried.
 */
function breakout(text: string): number {
  for (const rule of BREAKOUTS) {
    let from = 0;
    for (let tries = 0; tries < BREAKOUT_TRIES; tries++) {
      const m = rule.exec(from === 0 ? text : text.slice(from));
      if (m === null) break;
      const at = from + m.index;
      if (closesUnopened(text, at)) return at;
      from = at + 1;
    }
  }
  // Leading breakouts have no `(` before their close by construction.
  return LDAP_LEADING_BREAKOUT.exec(text)?.index ?? -1;
}

/** Whether the run of `)` at or after `at` closes more parentheses than the value opened. */
function closesUnopened(text: string, at: number): boolean {
  const close = text.indexOf(")", at);
  if (close < 0) return true;
  let open = 0;
  for (let i = 0; i < close; i++) {
    const c = text.charCodeAt(i);
    if (c === 40) open++;
    else if (c === 41 && open > 0) open--;
  }
  let run = 0;
  for (let i = close; i < text.length && run <= open; i++) {
    const c = text.charCodeAt(i);
    if (c === 41) run++;
    else if (c !== 32 && c !== 9) break;
  }
  return run > open;
}

/**
 * RFC 4515 escapes of the filter's own syntax: `\28` `(`, `\29` `)`, `\2a` `*`, `\7c` `|`,
 * `\26` `&`, `\21` `!`, `\3d` `=`. An application that unescapes input before it builds the
 * filter (or hands it to a second filter layer that does) reads `x\29\28cn=\2a` as `x)(cn=*`,
 * so the unescaped form is judged as a filter; the escapes alone prove nothing (`\2a` is how a
 * careful application writes a literal star).
 */
const LDAP_ESCAPE = /\\(2[1689a]|7c|3d)/gi;
const LDAP_ESCAPE_HINT = /\\(?:2[1689a]|7c|3d)/i;

function escapedLdap(value: DetectorInput, text: string): Finding | undefined {
  if (text.indexOf("\\") < 0 || !LDAP_ESCAPE_HINT.test(text)) return undefined;
  const plain = text.replace(
    LDAP_ESCAPE,
    (_, hex: string) => String.fromCharCode(parseInt(hex, 16)),
  );
  const found = ldap(value, plain);
  if (found === undefined) return undefined;
  return makeFinding(value, "ldap", 80, "ldap.escaped_breakout", plain, 0);
}
