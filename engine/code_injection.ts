/**
 * Code injection detector for PHP and Java (including OGNL, Spring EL and Struts), and the
 * entry to Node.js, Ruby and Perl code (`script_injection.ts`).
 *
 * Code is recognised by its call shape, not by its vocabulary: `system('id')` is a call with
 * a literal argument, while the word "system" in a sentence is not. Method calls on objects
 * (`regex.exec(s)`) are left to the XSS detector, which knows JavaScript.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";
import { asReported } from "./error_report.ts";
import { MAX_TEXT } from "./limits.ts";
import { java, JAVA_HINT, SPRING_CLASSLOADER } from "./java.ts";
import { factorAlternation } from "./regex_factor.ts";
import { phpCode } from "./php.ts";
import { scriptInjection } from "./script_injection.ts";
import { gated } from "./literal_gate.ts";

const MAX_CHARS = MAX_TEXT;

/** Java code needs a call, a brace, an OGNL or EL sigil, or a dotted name (`java.lang`). */
const JAVA_SHAPE = /[({#@%$\\]|[a-z]\.[a-z]/i;

/** Cheap gate: every rule below needs one of these characters. */
const GATE = /[(<{$#@%]/;
/** What the rest of the PHP rules need without those: `[php]`, `php://`, a directive's `=`. */
const PHP_GATE = /php\]|PHP\]|:\/\/|=/;

const PHP_OPEN =
  /<\?(?:php\b|=)|<\?\s*(?:echo|print|system|exec|passthru|eval|include|require)\b\s*[(\'"$]/i;
/*
 * The three call patterns below start with the character before the name rather than a
 * lookbehind: irregexp scans for a leading class twice as fast as it checks a lookbehind at
 * every position. A match then starts one character early, which only moves the evidence.
 */
/** Functions that run commands or code, called with a literal, a variable or a nested call. */
const PHP_EXEC_CALL = gated(
  /(?:^|[^.\w$>])(?:system|exec|shell_exec|passthru|popen|proc_open|pcntl_exec|assert|eval|create_function|call_user_func(?:_array)?|file_put_contents|preg_replace)\s*\(\s*(?:["'`$@]|[a-z_]\w*\s*\()/i,
);
/** Functions that read files or decode payloads: code-shaped, but also common in tutorials. */
const PHP_OTHER_CALL = gated(
  /(?:^|[^.\w$>])(?:include(?:_once)?|require(?:_once)?|file_get_contents|fwrite|show_source|highlight_file|readfile|base64_decode|gzinflate|str_rot13|unserialize|print_r|var_dump)\s*\(\s*(?:["'`$@]|[a-z_]\w*\s*\()/i,
);
/** Information functions that attackers call with no argument to confirm execution. */
const PHP_PROBE = gated(
  /(?:^|[^.\w$>])(?:phpinfo|phpversion|getcwd|get_current_user|php_uname|getmypid|posix_getpwuid|sys_get_temp_dir)\s*\(\s*\)/i,
);
/** `${@phpinfo()}`, `{${system(...)}}`: PHP complex variable syntax that calls a function. */
const PHP_COMPLEX_CALL = gated(/\$\{\s*@?\s*[a-z_]\w*\s*\(/i);
const PHP_SUPERGLOBAL = /\$_(?:GET|POST|REQUEST|COOKIE|SERVER|FILES|ENV|SESSION)\s*\[/;
const PREG_EVAL = gated(/preg_replace\s*\(\s*["'](.).{0,512}?\1[imsxu]*e[imsxu]*["']/i);

const DRUPAL_RENDER =
  /\[#(?:post_render|pre_render|lazy_builder|access_callback|process|value_callback)\]/i;

/**
 * Classic ASP / VBScript: statements and objects that only server-side script uses. One of
 * them may be quoted in a question about VB; two or more form code.
 */
const ASP_HINT = factorAlternation(
  /server\.|response\.|request\.|on\s+error|createobject|wscript|scripting\.|adodb\.|msxml2\.|execute|eval\s*\(|chrw?\s*\(/i,
);
const ASP_TOKENS: readonly RegExp[] = [
  /\bon\s+error\s+resume\s+next\b/i,
  /\bserver\.(?:createobject|mappath|scripttimeout|execute|transfer)\b/i,
  /\bresponse\.(?:write|binarywrite|redirect|addheader)\s*\(?/i,
  /\brequest\.(?:form|querystring|item|servervariables)\s*\(/i,
  /\bcreateobject\s*\(\s*["']/i,
  /\b(?:execute|executeglobal|eval)\s*\(\s*(?:request|["'])/i,
  /\b(?:wscript\.shell|scripting\.filesystemobject|adodb\.(?:stream|connection|recordset)|msxml2\.(?:serverxmlhttp|xmlhttp))\b/i,
  /\bchrw?\s*\(\s*&h[0-9a-f]/i,
];

/**
 * Reports PHP and Java code in a value.
 *
 * @param value the decoded input
 * @returns the strongest finding, class `php` or `java`
 */
export function codeInjection(value: DetectorInput): Finding | undefined {
  // An error report's source lines are the application's own code, quoted: medium at most.
  return asReported(code(value), value);
}

function code(value: DetectorInput): Finding | undefined {
  const name = value.input.name;
  if (name.length > 12 && SPRING_CLASSLOADER.test(name)) {
    return makeFinding(value, "java", 95, "java.classloader_param", name, 0);
  }
  if (name.indexOf("[#") >= 0 && DRUPAL_RENDER.test(name)) {
    return makeFinding(value, "php", 92, "php.render_array", name, 0);
  }
  const text = value.decoded.length > MAX_CHARS ? value.decoded.slice(0, MAX_CHARS) : value.decoded;
  const javaCode = stronger(
    JAVA_SHAPE.test(text) && JAVA_HINT.test(text) ? java(value, text) : undefined,
    scriptInjection(value, text),
  );
  if (!GATE.test(text)) {
    return PHP_GATE.test(text) ? stronger(javaCode, phpCode(value, text)) : javaCode;
  }
  return stronger(stronger(javaCode, php(value, text)), asp(value, text));
}

/**
 * A server script block that runs what the request carries: the one-line web shells of ASP,
 * ASP.NET and JScript (`<%eval request("x")%>`, `<%@ Page Language="Jscript"%><%eval(
 * Request.Item["p"],"unsafe");%>`); VBScript calls need no parentheses.
 */
const ASP_WEBSHELL = /<%[^%]{0,64}?\b(?:eval|execute(?:global)?)\b\s*\(?\s*request\b/i;

function asp(value: DetectorInput, text: string): Finding | undefined {
  const shell = text.indexOf("<%") >= 0 ? ASP_WEBSHELL.exec(text) : null;
  if (shell !== null) return makeFinding(value, "rce", 92, "rce.asp_code", text, shell.index);
  if (!ASP_HINT.test(text)) return undefined;
  let hits = 0;
  let first = -1;
  for (const token of ASP_TOKENS) {
    const m = token.exec(text);
    if (m === null) continue;
    hits++;
    if (first < 0 || m.index < first) first = m.index;
  }
  if (hits === 0) return undefined;
  return makeFinding(value, "rce", hits >= 2 ? 88 : 45, "rce.asp_code", text, first);
}

function php(value: DetectorInput, text: string): Finding | undefined {
  let best = phpCode(value, text);
  const open = PHP_OPEN.exec(text);
  if (open !== null) best = makeFinding(value, "php", 90, "php.open_tag", text, open.index);
  const complex = PHP_COMPLEX_CALL.exec(text);
  if (complex !== null) {
    best = stronger(best, makeFinding(value, "php", 92, "php.complex_call", text, complex.index));
  }
  if (text.indexOf("(") >= 0) {
    const call = PHP_EXEC_CALL.exec(text);
    if (call !== null) {
      // A dangerous call with a literal or a variable argument is code, not prose.
      best = stronger(best, makeFinding(value, "php", 85, "php.dangerous_call", text, call.index));
    }
    const other = PHP_OTHER_CALL.exec(text);
    if (other !== null) {
      best = stronger(best, makeFinding(value, "php", 60, "php.code_call", text, other.index));
    }
    const probe = PHP_PROBE.exec(text);
    if (probe !== null) {
      best = stronger(best, makeFinding(value, "php", 88, "php.probe_call", text, probe.index));
    }
    const preg = PREG_EVAL.exec(text);
    if (preg !== null) {
      best = stronger(best, makeFinding(value, "php", 92, "php.preg_eval", text, preg.index));
    }
  }
  const sg = text.indexOf("$_") >= 0 ? PHP_SUPERGLOBAL.exec(text) : null;
  if (sg !== null) {
    best = stronger(best, makeFinding(value, "php", 80, "php.superglobal", text, sg.index));
  }
  return best;
}
