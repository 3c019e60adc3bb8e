/**
 * JNDI lookup (Log4Shell) detector.
 *
 * Log4j resolves `${prefix:...}` lookups recursively, so attackers hide the `jndi` keyword
 * behind nested lookups (`${${lower:j}ndi:`, `${${::-j}${::-n}di:`). Rather than listing the
 * obfuscations, this detector evaluates the lookup language the way Log4j does for the
 * prefixes that only return text, and then looks for `jndi:` in the result.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { gated } from "./literal_gate.ts";

/** Innermost lookup: `${...}` without any nested `${`. */
const INNERMOST = /\$\{([^${}]*)\}/g;
/** Lookups Log4j offers that leak data or reach the network without `jndi`. */
const DATA_LOOKUP =
  /\$\{\s*(?:env|sys|java|ctx|main|bundle|k8s|docker|spring|web|log4j|marker|sd|map|jvmrunargs|base64|date|event|upper|lower|::-)[:}]/i;
const MAX_ROUNDS = 16;
const NESTED_LOOKUP = /\$\{(?:[^}]{0,15}\$\{|\s*ctx:)/i;

/** Evaluates one innermost lookup body the way Log4j would, returning its text. */
function resolveLookup(body: string): string {
  // `${anything:-default}` falls back to the default when the key is unknown, which is what
  // attackers rely on (`${env:NaN:-j}`, `${::-j}`).
  const dflt = body.indexOf(":-");
  if (dflt >= 0) return body.slice(dflt + 2);
  const colon = body.indexOf(":");
  if (colon < 0) return "";
  const prefix = body.slice(0, colon).trim().toLowerCase();
  const rest = body.slice(colon + 1);
  if (prefix === "lower") return rest.toLowerCase();
  if (prefix === "upper") return rest.toUpperCase();
  // `${date:'j'}` formats a quoted literal back to itself.
  if (prefix === "date") return rest.replace(/'/g, "");
  if (prefix === "jndi") return "\u0000jndi:" + rest;
  return "";
}

/**
 * HTML5's named references for the lookup's signs (`&dollar;`, `&lbrace;`, `&lcub;`, with or
 * without the `;`): a value that a page or a log viewer unescapes before Log4j reads it.
 */
const NAMED_SIGN = gated(/&(dollar|lbrace|lcub|rbrace|rcub);?/gi);
const SIGNS: Readonly<Record<string, string>> = {
  dollar: "$",
  lbrace: "{",
  lcub: "{",
  rbrace: "}",
  rcub: "}",
};

function unescapeNames(text: string): string {
  return text.replace(NAMED_SIGN, (_m, name: string) => SIGNS[name.toLowerCase()]!);
}

/** Commons Text's lookups that run a script or open a connection: `${script:`, `${dns:`, `${url:`. */
const TEXT_INTERPOLATION =
  /\$\{\s*(?:script\s*:\s*[a-z][\w-]*\s*:|dns\s*:\s*(?:address|canonical-name|name)\s*\||url\s*:\s*[\w-]+\s*:\s*(?:https?|ftp|file|jar):)/i;

/** A lookup's finding, its evidence the 120 characters from where it starts. */
function found(
  value: DetectorInput,
  cls: Finding["class"],
  confidence: Finding["confidence"],
  score: number,
  ruleId: string,
  text: string,
  at: number,
): Finding {
  return {
    class: cls,
    confidence,
    score,
    location: value.location,
    evidence: text.slice(at, at + 120),
    ruleId,
  };
}

/**
 * Reports a `${jndi:...}` lookup, also when hidden behind nested lookups.
 *
 * @param value the decoded input
 * @returns a critical finding for a JNDI lookup, a high one for a data-leaking lookup
 */
export function jndi(value: DetectorInput): Finding | undefined {
  const text = value.decoded.indexOf("&") >= 0 ? unescapeNames(value.decoded) : value.decoded;
  const start = text.indexOf("${");
  if (start < 0) return undefined;
  let current = text.slice(start, start + 2048);
  for (let round = 0; round < MAX_ROUNDS && current.indexOf("${") >= 0; round++) {
    const next = current.replace(INNERMOST, (_m, body: string) => resolveLookup(body));
    if (next === current) break;
    current = next;
    if (current.toLowerCase().indexOf("jndi:") >= 0) break;
  }
  const lower = current.toLowerCase();
  const at = lower.indexOf("jndi:");
  if (
    at >= 0 &&
    /^jndi:\s*(?:ldaps?|rmi|dns|iiop|corba|nds|nis|http|https)?\s*:?/.test(lower.slice(at))
  ) {
    return found(value, "jndi", "critical", 98, "jndi.lookup", text, start);
  }
  // Apache Commons Text's interpolator (CVE-2022-42889, "Text4Shell"): `${script:js:...}` runs
  // code, `${dns:...}` and `${url:...}` reach out from the server.
  const text4shell = TEXT_INTERPOLATION.exec(text);
  if (text4shell !== null) {
    return found(value, "java", "high", 85, "java.text_interpolation", text, text4shell.index);
  }
  // A lookup nested in another one's key, or Log4j's thread-context lookup, is what CRS
  // paranoia level 1 stops (944150): `${${sys:x}}`, `${ctx:loginId}`.
  const nested = NESTED_LOOKUP.exec(text);
  if (nested !== null) {
    return found(value, "jndi", "high", 72, "jndi.nested_lookup", text, nested.index);
  }
  const data = DATA_LOOKUP.exec(text);
  if (data !== null) {
    return found(value, "jndi", "medium", 50, "jndi.data_lookup", text, data.index);
  }
  return undefined;
}
