/**
 * Server-side template injection detector (Jinja2/Twig, FreeMarker, Velocity, Thymeleaf,
 * ERB, Smarty, Mako, Handlebars).
 *
 * Benign text uses template delimiters too (`{{name}}` in a help article, `${price}`), so a
 * delimiter alone scores low. What a probe or an exploit needs is an expression the engine
 * evaluates: arithmetic (`{{7*7}}`), Python object traversal (`__class__.__mro__`), the
 * engine's own globals (`config`, `lipsum`, `self._TemplateReference__context`) or a class
 * the engine instantiates (`freemarker.template.utility.Execute`).
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";
import { MAX_TEXT } from "./limits.ts";

const MAX_CHARS = MAX_TEXT;
const GATE = /[{}%#$<@[*]/;

interface Rule {
  readonly re: RegExp;
  readonly score: number;
  readonly ruleId: string;
}

/** Ordered strongest first; the first match wins. */
const RULES: readonly Rule[] = [
  {
    re:
      /freemarker\.template\.utility\.(?:Execute|ObjectConstructor|JythonRuntime)|<#assign\b|\[#assign\b|\?new\s*\(\s*\)|\?api\b/i,
    score: 94,
    ruleId: "ssti.freemarker",
  },
  {
    re:
      /\.__(?:class|mro|subclasses|globals|builtins|init|import|base|bases|getitem|getattribute|dict|module|code|func_globals|self)__\b|\b__import__\s*\(|_TemplateReference__context|\['__(?:class|globals|builtins|import)__'\]/,
    score: 92,
    ruleId: "ssti.python_object",
  },
  {
    re:
      /\$\{[^}$]*\b(?:os\.(?:system|popen)|subprocess\.|__import__|self\.module\.|self\.template\.|self\.context\.|self\.attr\.)/,
    score: 92,
    ruleId: "ssti.mako",
  },
  { re: /<%\s*import\s+os|<%!?\s*[^%]*\bos\.(?:system|popen)/, score: 92, ruleId: "ssti.mako" },
  {
    re:
      /<%=?\s*(?:`[^`]*`|system\s*\(|exec\s*\(|File\.(?:open|read)|IO\.popen|Dir\.|eval\s*\(|require\s)/,
    score: 92,
    ruleId: "ssti.erb_code",
  },
  {
    re:
      /\{php\}|\{\/php\}|\{\$smarty\.|\{system\s*\(|Smarty_Internal_Write_File|\{self::getStreamVariable/i,
    score: 90,
    ruleId: "ssti.smarty",
  },
  {
    re: /#set\s*\(\s*\$\w+\s*=|\$class\.inspect\s*\(|\$\w+\.getClass\s*\(\s*\)/,
    score: 88,
    ruleId: "ssti.velocity",
  },
  { re: /__\$\{[^}$]+\}__\s*(?:::|\.)/, score: 90, ruleId: "ssti.thymeleaf_preprocess" },
  {
    re:
      /\{\{(?:[^{}]|\{(?!\{))*(?:\|\s*(?:attr|filter|map|join|format|select|reverse)\s*\(|\[\s*['"]_|\bconstructor\b|\.getClass\s*\(|\.forName\s*\(|\bself\.__|\bget_flashed_messages\b|\burl_for\.__|\blipsum\b|\bcycler\b|\bjoiner\b|\bnamespace\b|\brequest\.(?:application|environ|args|__)|\bconfig\.(?:items|__|from_)|\b_self\.env\b|\bdump\s*\(\s*app\b|\bapp\.request\b|\[\s*\]\s*\.\s*(?:class|__)|(?:''|"")\s*\.\s*(?:class|__|join)|\(\s*\)\s*\.\s*__)/,
    score: 88,
    ruleId: "ssti.engine_object",
  },
  {
    re:
      /\{%-?\s*(?:for|if|set|import|include|extends|macro|raw|debug|with|print)\b[^%]*(?:__|config|self|request|lipsum|\(\)|os\b)/,
    score: 86,
    ruleId: "ssti.jinja_statement",
  },
  {
    re:
      /\{\{\s*['"][^'"{}]*['"]\s*(?:\*\s*\d|\.\s*\w+\s*\()|\{\{\s*\d+\s*[-+*/%]\s*['"]?\d+['"]?\s*\}\}/,
    score: 86,
    ruleId: "ssti.arithmetic",
  },
  {
    // Jinja's `{% print 7*7 %}` prints as `{{ }}` does, for filters that drop `{{`.
    re:
      /(?:\$\{\{?|#\{|\*\{|@\(|\[\[|\{\{|<%=|\{%-?\s*print\b\s*\(?)\s*\d+\s*[-+*/%]\s*\d+\s*(?:\}\}?|\)|\]\]|%>|-?%\})/,
    score: 82,
    ruleId: "ssti.arithmetic",
  },
  {
    re: /\{\{\s*(?:config|self|request|settings|app|_self|g|session)\s*(?:\}\}|\.\s*\w|\|)/,
    score: 78,
    ruleId: "ssti.engine_global",
  },
  {
    re: /\{%\s*(?:for|if|set|import|include|extends|macro)\b[^%]*%\}/i,
    score: 55,
    ruleId: "ssti.statement",
  },
  { re: /\{\{[^{}]{1,80}\}\}/, score: 25, ruleId: "ssti.expression" },
];

/**
 * Reports template expressions that evaluate code or reach the engine's internals.
 *
 * @param value the decoded input
 * @returns the first matching rule's finding, class `ssti`
 */
export function ssti(value: DetectorInput): Finding | undefined {
  const text = value.decoded.length > MAX_CHARS ? value.decoded.slice(0, MAX_CHARS) : value.decoded;
  if (!GATE.test(text)) return undefined;
  for (const rule of RULES) {
    const m = rule.re.exec(text);
    if (m !== null) return makeFinding(value, "ssti", rule.score, rule.ruleId, text, m.index);
  }
  return undefined;
}
