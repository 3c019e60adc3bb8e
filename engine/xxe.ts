/**
 * XML external entity, XInclude and XSLT injection detector.
 *
 * An internal DTD subset is what an XXE needs: `<!ENTITY name SYSTEM "uri">` or a parameter
 * entity `%name;` that pulls a remote DTD. Documents without a DOCTYPE (SOAP, SVG, RSS) are
 * ordinary XML and pass. XInclude and XSLT are judged the same way, by the element that reads
 * files or runs code.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";

interface Rule {
  readonly re: RegExp;
  readonly score: number;
  readonly ruleId: string;
}

/**
 * Ordered strongest first; the first match wins. A run inside one construct (`[^<>]*`, a
 * subset up to the next DOCTYPE) stops where the next construct starts, so a text of nothing
 * but openings is read once.
 */
const RULES: readonly Rule[] = [
  {
    re: /<!ENTITY\s+(?:%\s*)?[\w.:-]+\s+(?:SYSTEM|PUBLIC)\b/i,
    score: 95,
    ruleId: "xxe.external_entity",
  },
  {
    re: /<!DOCTYPE\s+[\w.:-]+\s+(?:SYSTEM|PUBLIC)\s+["'][^"']*["']/i,
    score: 85,
    ruleId: "xxe.external_dtd",
  },
  {
    re: /<!DOCTYPE\s+[\w.:-]+\s*\[(?:[^\]<]|<(?!!DOCTYPE))*<!ENTITY/i,
    score: 90,
    ruleId: "xxe.internal_subset",
  },
  { re: /<!ENTITY\s+%\s*[\w.:-]+/i, score: 90, ruleId: "xxe.parameter_entity" },
  { re: /<!ENTITY\s+[\w.:-]+\s+["'][^"']*&[\w.:-]+;/i, score: 90, ruleId: "xxe.entity_expansion" },
  { re: /<!ENTITY\s+[\w.:-]+\s+["']/i, score: 75, ruleId: "xxe.entity" },
  {
    re:
      /<(?:\w+:)?include\b[^<>]*\bxmlns(?::\w+)?\s*=\s*["']http:\/\/www\.w3\.org\/2001\/XInclude/i,
    score: 92,
    ruleId: "xxe.xinclude",
  },
  { re: /<xi:include\b[^<>]*\bhref\s*=/i, score: 90, ruleId: "xxe.xinclude" },
  {
    re:
      /<xsl:(?:value-of|copy-of|variable|param|if|when)\b[^<>]*\bselect\s*=\s*["'][^"']*(?:php:function|system-property\s*\(|document\s*\(|unparsed-text\s*\(|java:|Runtime|exec\s*\()/i,
    score: 92,
    ruleId: "xxe.xslt_code",
  },
  {
    re:
      /xmlns:(?:php|java|msxsl|rt|ob|js)\s*=\s*["'](?:http:\/\/php\.net\/xsl|java:|urn:schemas-microsoft-com:xslt)/i,
    score: 90,
    ruleId: "xxe.xslt_extension",
  },
  { re: /<xsl:(?:stylesheet|transform)\b/i, score: 80, ruleId: "xxe.xslt" },
  { re: /<!DOCTYPE\s+[\w.:-]+\s*\[/i, score: 60, ruleId: "xxe.internal_subset" },
];

/**
 * Reports DTDs with entities, XInclude and XSLT that reads files or runs code.
 *
 * @param value the decoded input
 * @returns the first matching rule's finding, class `xxe`
 */
export function xxe(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  const lt = text.indexOf("<");
  if (lt < 0) return undefined;
  if (
    text.indexOf("<!", lt) < 0 && text.indexOf("include", lt) < 0 && text.indexOf("xsl", lt) < 0
  ) {
    return undefined;
  }
  for (const rule of RULES) {
    const m = rule.re.exec(text);
    if (m !== null) return makeFinding(value, "xxe", rule.score, rule.ruleId, text, m.index);
  }
  return undefined;
}
