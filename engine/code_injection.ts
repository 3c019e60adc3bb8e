/**
 * Code injection detector for PHP and Java (including OGNL, Spring EL and Struts).
 *
 * Code is recognised by its call shape, not by its vocabulary: `system('id')` is a call with
 * a literal argument, while the word "system" in a sentence is not. Method calls on objects
 * (`regex.exec(s)`) are left to the XSS detector, which knows JavaScript.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";
import { MAX_TEXT } from "./limits.ts";

const MAX_CHARS = MAX_TEXT;

/** Cheap gate: every rule below needs one of these characters. */
const GATE = /[(<{$#@%]/;

const PHP_OPEN = /<\?(?:php\b|=)/i;
/** Functions that run commands or code, called with a literal, a variable or a nested call. */
const PHP_EXEC_CALL =
  /(?<![.\w$>])(?:system|exec|shell_exec|passthru|popen|proc_open|pcntl_exec|assert|eval|create_function|call_user_func(?:_array)?|file_put_contents|preg_replace)\s*\(\s*(?:["'`$@]|[a-z_]\w*\s*\()/i;
/** Functions that read files or decode payloads: code-shaped, but also common in tutorials. */
const PHP_OTHER_CALL =
  /(?<![.\w$>])(?:include(?:_once)?|require(?:_once)?|file_get_contents|fwrite|show_source|highlight_file|readfile|base64_decode|gzinflate|str_rot13|unserialize|print_r|var_dump)\s*\(\s*(?:["'`$@]|[a-z_]\w*\s*\()/i;
/** Information functions that attackers call with no argument to confirm execution. */
const PHP_PROBE =
  /(?<![.\w$>])(?:phpinfo|phpversion|getcwd|get_current_user|php_uname|getmypid|posix_getpwuid|sys_get_temp_dir)\s*\(\s*\)/i;
/** `${@phpinfo()}`, `{${system(...)}}`: PHP complex variable syntax that calls a function. */
const PHP_COMPLEX_CALL = /\$\{\s*@?\s*[a-z_]\w*\s*\(/i;
const PHP_SUPERGLOBAL = /\$_(?:GET|POST|REQUEST|COOKIE|SERVER|FILES|ENV|SESSION)\s*\[/;
const PREG_EVAL = /preg_replace\s*\(\s*["'](.).*\1[imsxu]*e[imsxu]*["']/i;

const JAVA_RUNTIME =
  /java\.lang\.(?:Runtime|ProcessBuilder|System|Class|reflect|Thread|ClassLoader)|getRuntime\s*\(\s*\)|\.exec\s*\(\s*["'][^"']*["']\s*\)|new\s+ProcessBuilder\b|ProcessBuilder\s*\(|javax\.script\.ScriptEngineManager|\.getClass\s*\(\s*\)\s*\.forName\s*\(|Class\.forName\s*\(|getDeclaredMethod\s*\(|\.newInstance\s*\(\s*\)\s*\.|org\.apache\.commons\.(?:io|collections)|com\.sun\.org\.apache|javax\.naming\.InitialContext/;
const OGNL =
  /%\{\s*\(?\s*#|#_memberAccess|@ognl\.OgnlContext@|#context\s*\[|\(#[a-z_]\w*\s*=|@java\.lang\.\w+@|#(?:application|session|request|parameters|attr)\s*\[|\bognl\b.*#/i;
const STRUTS_PREFIX = /\b(?:redirect|redirectAction|action):\s*\$\{/i;
const SPRING_CLASSLOADER = /\bclass\.(?:module\.)?classLoader\b|\bclass\.protectionDomain\b/i;
/** Groovy's `"cmd".execute()` and escaped EL (`$\\A{...}`) that Nexus-style validators evaluate. */
const GROOVY_EL = /["'][^"'\n]{1,200}["']\s*\.execute\s*\(\s*\)|\$\\+[a-z]?\{[^}]*[-+*/]/i;
/** Node.js server-side code: reaching `process` or `child_process` from an evaluated string. */
const NODE_CODE =
  /\bchild_process\b|\.constructor\s*\.\s*constructor\s*\(|\bprocess\.mainModule\b|\b(?:execSync|spawnSync|execFileSync)\s*\(|\brequire\s*\(\s*["'](?:child_process|fs|net|vm)["']\s*\)/;
/** Drupal render-array keys (`mail[#post_render][]=exec`) that call a function on render. */
const DRUPAL_RENDER =
  /\[#(?:post_render|pre_render|lazy_builder|access_callback|process|value_callback)\]/i;
const SPEL = /\bT\s*\(\s*java\.|new\s+java\.(?:lang|io|net|util)\.|#\{\s*T\s*\(/;

/**
 * Classic ASP / VBScript: statements and objects that only server-side script uses. One of
 * them may be quoted in a question about VB; two or more form code.
 */
const ASP_HINT =
  /server\.|response\.|request\.|on\s+error|createobject|wscript|scripting\.|adodb\.|msxml2\.|execute|eval\s*\(|chrw?\s*\(/i;
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
  const name = value.input.name;
  if (name.length > 12 && SPRING_CLASSLOADER.test(name)) {
    return makeFinding(value, "java", 95, "java.classloader_param", name, 0);
  }
  if (name.indexOf("[#") >= 0 && DRUPAL_RENDER.test(name)) {
    return makeFinding(value, "php", 92, "php.render_array", name, 0);
  }
  const text = value.decoded.length > MAX_CHARS ? value.decoded.slice(0, MAX_CHARS) : value.decoded;
  if (!GATE.test(text)) {
    const cl = text.indexOf("lass") >= 0 ? SPRING_CLASSLOADER.exec(text) : null;
    return cl === null
      ? undefined
      : makeFinding(value, "java", 90, "java.classloader", text, cl.index);
  }
  return stronger(stronger(php(value, text), java(value, text)), asp(value, text));
}

function asp(value: DetectorInput, text: string): Finding | undefined {
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
  let best: Finding | undefined;
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

function java(value: DetectorInput, text: string): Finding | undefined {
  let best: Finding | undefined;
  const rt = JAVA_RUNTIME.exec(text);
  if (rt !== null) best = makeFinding(value, "java", 90, "java.runtime", text, rt.index);
  if (text.indexOf("#") >= 0 || text.indexOf("@") >= 0) {
    const ognl = OGNL.exec(text);
    if (ognl !== null) {
      best = stronger(best, makeFinding(value, "java", 92, "java.ognl", text, ognl.index));
    }
  }
  const struts = STRUTS_PREFIX.exec(text);
  if (struts !== null) {
    best = stronger(best, makeFinding(value, "java", 90, "java.struts_prefix", text, struts.index));
  }
  const groovy = GROOVY_EL.exec(text);
  if (groovy !== null) {
    best = stronger(best, makeFinding(value, "java", 88, "java.groovy_el", text, groovy.index));
  }
  const node = NODE_CODE.exec(text);
  if (node !== null) {
    best = stronger(best, makeFinding(value, "rce", 90, "rce.node_code", text, node.index));
  }
  const spel = SPEL.exec(text);
  if (spel !== null) {
    best = stronger(best, makeFinding(value, "java", 92, "java.spel", text, spel.index));
  }
  const cl = SPRING_CLASSLOADER.exec(text);
  if (cl !== null) {
    best = stronger(best, makeFinding(value, "java", 90, "java.classloader", text, cl.index));
  }
  return best;
}
