/**
 * Server-side script injection for Node.js, Ruby, Perl and Python: what a value that reaches `eval`,
 * `vm.runInContext`, a template engine's expression or Ruby's `instance_eval` needs.
 *
 * - Node.js: the globals a payload climbs to (`process.mainModule`, `process.env`,
 *   `process["binding"]`, `require.cache`, `this.constructor.constructor`), the console methods
 *   probes call (`console.info(1)`), React Server Components references that walk to a
 *   constructor (`"$1:constructor:constructor"`), and loops that never end (`while(true);`, a
 *   denial of service for a single-threaded server). JavaScript's escapes in identifiers
 *   (`c\u006fnsole`) are read as the letters they stand for.
 * - Ruby: the calls that spawn processes (`Process.spawn(`, `Kernel.exec(`, `IO.popen(`,
 *   `Open3.capture2(`), `%x(...)`, and a string broken out of with `+` around a call
 *   (`'+sleep(20.to_i)+'`).
 * - Perl: `@{[ ... ]}` interpolation, which runs code inside a string (paranoia level 2 in CRS).
 * - Python: `__import__('os')` inside an expression, and the calls that spawn processes
 *   (`os.system('id')`, `subprocess.check_output([...])`, `pty.spawn("/bin/sh")`).
 *
 * A global's name inside prose or a long text (a stack trace's `process.env`, a tutorial's
 * `console.info(x)`) is a medium signal; in a short value of code it blocks.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";
import { factorAlternation } from "./regex_factor.ts";
import { proseWords } from "./php.ts";
import { gated } from "./literal_gate.ts";

/** What the Node.js and Ruby rules need. */
const NODE_HINT = gated(/process|require|constructor|__js_function|Function|global/);
const RUBY_HINT = /Process|Kernel|IO|Open3|PTY/;
/** Literals one of the rules needs. */
const HINT = factorAlternation(
  /process|require|console|constructor|prototype|__proto__|__js_function|__import__|Function|while|Process|Kernel|IO|Open3|PTY|%x|\+|@\{|\\u|\\x|os\.|subprocess|pty\./,
);

/**
 * What a value of words and dots alone (which the inspector otherwise skips) must start with
 * or hold to be worth this detector: `process.env`, `this.constructor.constructor`.
 */
export const INERT_SCRIPT_HINT =
  /^(?:process|require|global|globalThis|this|console)\.|__js_function|constructor\.constructor/;

/** Node globals that reach the process, the module loader or the host. */
const NODE_CRITICAL =
  /\bprocess\s*(?:\.\s*|\[\s*["'`]\s*)(?:mainModule|binding|dlopen|_linkedBinding)\b|\b__js_function\b|\bglobal(?:This)?\s*\.\s*process\b/;
const NODE_GLOBAL =
  /\bprocess\s*(?:(?:\.\s*|\[\s*["'`]\s*)(?:env|argv|kill|exit|cwd|chdir|setuid|setgid|getuid|umask|constructor|global|process|require|stdout|stdin|emit)\b|\[)|\brequire\s*(?:\.\s*(?:resolve|main|extensions|cache)\b|\[)|\bnew\s+Function\s*\(|\bthis\s*\.\s*constructor\b|\bconstructor\s*\.\s*constructor\b/;
/**
 * Console methods that print where a blind probe reads them back; `console.log`, which every
 * code sample calls, is left out (as CRS 934100 leaves it).
 */
const NODE_CONSOLE =
  /\bconsole\s*(?:\.\s*(?:debug|error|info|trace|warn)\s*(?:\.\s*(?:call|apply|bind)\s*)?\(|\[\s*["'`](?:debug|error|info|trace|warn)["'`]\s*\]\s*\()/;
/** React Server Components' references (`$1:constructor:constructor`, `$7:Module:prototype`). */
const FLIGHT_REFERENCE = /["']\$[0-9a-f]{1,4}:(?:[\w$]+:)*(?:constructor|__proto__|prototype)\b/i;
/**
 * `while(<always true>)`: a constant, a negated falsy value, an object or array literal, a
 * non-empty string, `this`, `new X` (CRS 934160).
 */
const ENDLESS_LOOP =
  /\bwhile\s*\(\s*\(*\s*(?:!+\s*(?:false|null|undefined|NaN|[+-]?0|""|''|``)|(?:!!)*\s*(?:true|this|[+-]?Infinity|[+-]?[1-9]\d*|new\s+[A-Za-z]\w*|window|String|Boolean|Function|Object|Array|\{[^{}]*\}|\[[^[\]]*\]|"[^"]+"|'[^']+'|`[^`]+`))\s*\)*\s*\)/;

/** Ruby's process calls. */
const RUBY_SPAWN =
  /\b(?:Process\s*\.\s*(?:spawn|exec|fork|daemon)|Kernel\s*\.\s*(?:exec|system|spawn|eval|open|fork|`)|IO\s*\.\s*popen|Open3\s*\.\s*(?:popen[23]e?|capture[23]e?|pipeline\w*)|PTY\s*\.\s*spawn)\s*(?:\(|["'`])/;
/** `%x(id)`, `%x{id}`: Ruby's command literal (not a ratio's `50%x(2)`). */
const RUBY_COMMAND =
  /(?:^|[^\w%])%x(?:\(\s*[a-z/][^()]{0,200}\)|\{\s*[a-z/][^{}]{0,200}\}|\[\s*[a-z/][^[\]]{0,200}\])/i;
/** A string closed, a call added with `+`, the string reopened: `'+sleep(20.to_i)+'`. */
const CONCAT_CALL =
  /["']\s*\+\s*(?:sleep|system|exec|eval|spawn|fork|syscall|send|require|open|popen|instance_eval|class_eval)\s*\(?[^'"\n]{0,80}?\)?\s*\+\s*["']/;
/**
 * Ruby's `Kernel#open` and Perl's two-argument `open` run a command when the name starts with a
 * pipe: `open("|id")`, `open(FH, "| cat /etc/passwd")`. Called, with its parenthesis: prose
 * writes `open "| Mon-Fri"`.
 */
const PIPE_OPEN = /\bopen\s*\(\s*(?:[A-Za-z_]\w{0,31}\s*,\s*)?["'`]\s*\|\s*[a-z/]/i;
/**
 * Python: a module imported by name from inside an expression (`__import__('os')`), which is
 * how a payload reaches `os` or `subprocess` from `eval` without an import statement.
 */
const PYTHON_IMPORT = /\b__import__\s*\(\s*["']\w+["']\s*\)/;
/**
 * Python's process calls with a literal command (`os.system('id')`,
 * `subprocess.check_output(['id'])`, `pty.spawn("/bin/sh")`): an injection, or the code a
 * notebook or a script console saves.
 */
const PYTHON_SPAWN =
  /\b(?:os\s*\.\s*(?:system|popen|exec[lv]p?e?|spawn[lv]p?e?|posix_spawnp?)|subprocess\s*\.\s*(?:call|run|Popen|check_output|check_call|getoutput|getstatusoutput)|pty\s*\.\s*spawn|commands\s*\.\s*getoutput)\s*\(\s*(?:["'\[]|f["'])/;
/** Perl's `@{[ code ]}`, which runs inside a double-quoted string. */
const PERL_INTERPOLATION = /@\{\s*\[[^\]]{1,200}\]/;
const JS_ESCAPE = /\\u\{([0-9a-f]{1,6})\}|\\u([0-9a-f]{4})|\\x([0-9a-f]{2})/gi;
/** A value this long or with this many words of prose around is text, not an expression. */
const MAX_CODE = 512;
const PROSE = 3;

/**
 * Reports Node.js, Ruby and Perl code in a value.
 *
 * @param value the decoded input
 * @param text the text to read (the decoded value, clipped)
 * @returns the strongest finding, class `rce`
 */
export function scriptInjection(value: DetectorInput, text: string): Finding | undefined {
  if (!HINT.test(text)) {
    // A pipe is rare in text, `open` is not: this rule goes by the pipe, not the hint.
    const pipe = text.indexOf("|") >= 0 ? PIPE_OPEN.exec(text) : null;
    return pipe !== null ? found(value, 85, "rce.pipe_open", text, pipe.index) : undefined;
  }
  const src = text.indexOf("\\u") >= 0 || text.indexOf("\\x") >= 0 ? unescapeJs(text) : text;
  // Whether the value is code alone, worked out once a rule needs it.
  let known: boolean | undefined;
  const isCode = () => known ??= src.length <= MAX_CODE && proseWords(src) < PROSE;
  let best: Finding | undefined;
  const node = NODE_HINT.test(src);
  const critical = node ? NODE_CRITICAL.exec(src) : null;
  if (critical !== null) return found(value, 90, "rce.node_code", src, critical.index);
  const flight = src.indexOf(":") >= 0 && src.indexOf("$") >= 0 ? FLIGHT_REFERENCE.exec(src) : null;
  if (flight !== null) return found(value, 90, "rce.node_code", src, flight.index);
  const global = node ? NODE_GLOBAL.exec(src) : null;
  if (global !== null) best = found(value, isCode() ? 78 : 45, "rce.node_code", src, global.index);
  const log = src.indexOf("console") >= 0 ? NODE_CONSOLE.exec(src) : null;
  if (log !== null) {
    best = stronger(best, found(value, isCode() ? 72 : 40, "rce.node_code", src, log.index));
  }
  const loop = src.indexOf("while") >= 0 ? ENDLESS_LOOP.exec(src) : null;
  if (loop !== null) {
    best = stronger(best, found(value, isCode() ? 75 : 45, "rce.endless_loop", src, loop.index));
  }
  const spawn = RUBY_HINT.test(src) ? RUBY_SPAWN.exec(src) : null;
  if (spawn !== null) best = stronger(best, found(value, 88, "rce.ruby_code", src, spawn.index));
  const command = src.indexOf("%x") >= 0 ? RUBY_COMMAND.exec(src) : null;
  if (command !== null) {
    best = stronger(best, found(value, isCode() ? 75 : 45, "rce.ruby_code", src, command.index));
  }
  const concat = src.indexOf("+") >= 0 ? CONCAT_CALL.exec(src) : null;
  if (concat !== null) {
    best = stronger(best, found(value, 85, "rce.concatenated_call", src, concat.index));
  }
  const pipe = src.indexOf("|") >= 0 ? PIPE_OPEN.exec(src) : null;
  if (pipe !== null) best = stronger(best, found(value, 85, "rce.pipe_open", src, pipe.index));
  const python = src.indexOf("__import__") >= 0 ? PYTHON_IMPORT.exec(src) : null;
  if (python !== null) {
    best = stronger(best, found(value, 88, "rce.python_code", src, python.index));
  }
  const call = src.indexOf(".") >= 0 ? PYTHON_SPAWN.exec(src) : null;
  if (call !== null) {
    // Code cells, notebooks and scripts posted to the apps that run them hold these calls:
    // medium (what `strict` blocks), unless the value imports the module itself (above).
    best = stronger(best, found(value, isCode() ? 65 : 45, "rce.python_code", src, call.index));
  }
  const perl = src.indexOf("@{") >= 0 ? PERL_INTERPOLATION.exec(src) : null;
  if (perl !== null) best = stronger(best, found(value, 60, "rce.perl_code", src, perl.index));
  return best;
}

function found(
  value: DetectorInput,
  score: number,
  ruleId: string,
  text: string,
  at: number,
): Finding {
  return makeFinding(value, "rce", score, ruleId, text, at);
}

function unescapeJs(text: string): string {
  return text.replace(JS_ESCAPE, (m, braced?: string, u?: string, x?: string) => {
    const code = parseInt(braced ?? u ?? x ?? "", 16);
    return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : m;
  });
}
