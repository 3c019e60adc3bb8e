/**
 * Insecure deserialisation detector.
 *
 * Serialised object graphs have fixed magic prefixes (Java `rO0AB` / `aced0005`, .NET
 * `AAEAAAD/////`), fixed grammars (PHP `O:8:"stdClass":1:{`) or type tags that name a gadget
 * class (`$type`, `@type`, `!!python/object`). None of these occur in ordinary form values.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";
import { MAX_TEXT } from "./limits.ts";
import { factorAlternation } from "./regex_factor.ts";
import { javaToken } from "./java.ts";

const MAX_CHARS = MAX_TEXT;

interface Rule {
  readonly re: RegExp;
  readonly score: number;
  readonly ruleId: string;
}

/** Ordered strongest first; the first match wins. */
const RULES: readonly Rule[] = [
  { re: /_\$\$ND_FUNC\$\$_/, score: 95, ruleId: "deserialization.node_serialize" },
  {
    re: /(?:^|[^A-Za-z0-9+/])rO0AB[A-Za-z0-9+/]{8,}/,
    score: 92,
    ruleId: "deserialization.java_base64",
  },
  { re: /(?:^|[^0-9a-f])aced0005[0-9a-f]{6,}/i, score: 92, ruleId: "deserialization.java_hex" },
  { re: /AAEAAAD\/{5,}/, score: 92, ruleId: "deserialization.dotnet_binary" },
  {
    re:
      /System\.(?:Windows\.Data\.ObjectDataProvider|Diagnostics\.Process|Management\.Automation|Security\.Principal\.WindowsIdentity|Configuration\.Install\.AssemblyInstaller|Workflow\.ComponentModel|Web\.Security\.RolePrincipal|IdentityModel\.Tokens)|TypeConfuseDelegate|ActivitySurrogateSelector|TextFormattingRunProperties/,
    score: 92,
    ruleId: "deserialization.dotnet_gadget",
  },
  {
    re: /["']?(?:\$type|__type)["']?\s*:\s*["'][\w.]+,\s*[\w.]+/,
    score: 80,
    ruleId: "deserialization.dotnet_type",
  },
  {
    re: /["']@type["']\s*:\s*["'](?:com|org|java|javax|sun|net|ch|br)\./,
    score: 92,
    ruleId: "deserialization.fastjson_type",
  },
  {
    re:
      /\[\s*["'](?:com\.sun\.rowset\.JdbcRowSetImpl|org\.apache\.[\w.]+|ch\.qos\.logback\.[\w.]+|com\.zaxxer\.[\w.]+|org\.springframework\.[\w.]+)["']\s*,/,
    score: 90,
    ruleId: "deserialization.jackson_type",
  },
  {
    re:
      /!!(?:python\/(?:object|name|module)|javax\.script|java\.net\.URL|com\.sun|java\.lang|org\.apache)|!ruby\/(?:object|hash|struct)/,
    score: 92,
    ruleId: "deserialization.yaml_tag",
  },
  {
    re:
      /(?:^|\n)c(?:os|posix|nt|subprocess|builtins|__builtin__|commands)\n(?:system|popen|exec|eval|check_output|call|getoutput)\n/,
    score: 95,
    ruleId: "deserialization.pickle",
  },
  { re: /^gASV[A-Za-z0-9+/]{8,}/, score: 75, ruleId: "deserialization.pickle_base64" },
  {
    re: /(?:^|[;{}])O:\d{1,4}:"[A-Za-z_\\][\w\\]*":\d{1,4}:\{/,
    score: 88,
    ruleId: "deserialization.php_object",
  },
  {
    re: /(?:^|[;{}])C:\d{1,4}:"[A-Za-z_\\][\w\\]*":\d{1,6}:\{/,
    score: 85,
    ruleId: "deserialization.php_custom",
  },
  { re: /^a:\d{1,4}:\{(?:i:\d+;|s:\d+:")/, score: 50, ruleId: "deserialization.php_array" },
];

const PADDED_TOKEN = /^[A-Za-z0-9_-]{6,2048}={1,2}$/;

/** Characters one of the rules needs; values without any of them are skipped. */
const GATE = factorAlternation(
  /_\$\$ND_FUNC|rO0AB|aced0005|AAEAAAD|System\.|TypeConfuse|ActivitySurrogate|TextFormatting|[$_@]type|\[\s*["'](?:com|org|ch)\.|!!|!ruby|\n(?:system|popen|exec|eval|check_output|call|getoutput)\n|^gASV|[OC]:\d{1,4}:"|^a:\d{1,4}:\{/i,
);

/**
 * Reports serialised objects and type tags that name gadget classes.
 *
 * @param value the decoded input
 * @returns the first matching rule's finding, class `deserialization`
 */
export function deserialization(value: DetectorInput): Finding | undefined {
  const text = value.decoded.length > MAX_CHARS ? value.decoded.slice(0, MAX_CHARS) : value.decoded;
  // Padded base64 is no inert token, so the inspector's look at tokens misses it.
  if (text.charCodeAt(text.length - 1) === 61 /* = */ && PADDED_TOKEN.test(text)) {
    return javaToken(value);
  }
  if (text.length < 8 || !GATE.test(text)) return undefined;
  for (const rule of RULES) {
    const m = rule.re.exec(text);
    if (m !== null) {
      return makeFinding(value, "deserialization", rule.score, rule.ruleId, text, m.index);
    }
  }
  return undefined;
}
