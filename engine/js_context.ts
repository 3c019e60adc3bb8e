/**
 * XSS in a script context: the value lands inside a `<script>` block or a JavaScript string,
 * so no markup is needed. What gives it away is the shape of the code at the value's start
 * (or right after it closes the string): a computed call on a global object
 * (`top['al'+'ert'](1)`), the Function constructor (`constructor.constructor('...')()`), a
 * sink called or aliased (`;a=alert;a(1)`), or JSFuck (`[][(![]+[])[+[]]...]`).
 *
 * Anchoring at the start keeps code samples that merely contain `window[...]` deep inside
 * from matching.
 */

/** What may precede the injected code: a quote closing the string, then `;`, an operator. */
const BREAKOUT_PREFIX =
  /^\s*(?:['"`]\s*[)}\]]*\s*)?(?:[;,+\-*/|&^%=?:]\s*|\binstanceof\s+|\bin\s+)*/;
/** Objects that expose the global scope; bracket access on them hides the called name. */
const GLOBAL_CALL =
  /^(?:window|self|top|parent|frames|globalThis|this|document|content|opener)\s*\[[^\]]{1,200}\]\s*(?:\[[^\]]{1,200}\]\s*)*\(/;
/** The Function constructor reached through any object: turns a string into code. */
const FUNCTION_CONSTRUCTOR =
  /\bconstructor\s*\.\s*constructor\s*\(|\.constructor\s*\.\s*prototype\b|\bconstructor\s*\[\s*['"`]constructor|\.constructor\s*\(\s*['"`][^'"`]{0,200}\b(?:alert|prompt|confirm|eval|fetch|document|location|window)\b[^'"`]{0,200}['"`]\s*\)\s*\(/;
/** Sinks that run or reveal code, called or aliased at the start of the injected code. */
const SINKS = "alert|prompt|confirm|eval|print|setTimeout|setInterval|Function|importScripts";
/**
 * How a sink is invoked: called (`alert(`, a tagged template), aliased (`;`, `,`), called
 * optionally (`alert?.(`) or through `Function.prototype` (`alert.call(null,1)`).
 */
const INVOKE = "\\s*(?:[(`;,]|\\?\\.\\s*\\(|\\.\\s*(?:call|apply|bind)\\s*\\()";
const SINK_START = new RegExp(`^(?:[\\w$]+\\s*=\\s*)?(?:${SINKS})${INVOKE}`);
/**
 * A sink called right after a statement separator or a closed block (`}alert(1)`), passed
 * as a callback (`.find(alert)`), or called through parentheses (`(alert)(1)`); "(eval)" in a
 * sentence is neither.
 */
const SINK_AFTER_SEPARATOR = new RegExp(
  `(?:^|[;,])\\s*(?:${SINKS})\\s*[(\`]|\\}\\s*(?:alert|prompt|confirm)\\s*[(\`]|[\\w$.\\])]\\(\\s*(?:alert|prompt|confirm|eval)\\s*\\)|\\(\\s*(?:alert|prompt|confirm|eval)\\s*\\)\\s*[(\`]`,
);
/** `print` called with an argument: how other languages print, never a script probe. */
const PRINT_WITH_ARGUMENT = /^print\s*\(\s*[^\s)]/;
const JSFUCK_CHARS = /[[\]()!+{}]/g;

/** A script-context verdict. */
export interface JsVerdict {
  readonly rule: string;
  readonly score: number;
}

/**
 * Judges a value as injected JavaScript.
 *
 * @param text decoded value
 * @returns the verdict, or undefined when nothing script-like starts the value
 */
export function analyzeJs(text: string): JsVerdict | undefined {
  if (!text.includes("(") && !text.includes("`")) return undefined;
  if (FUNCTION_CONSTRUCTOR.test(text)) return { rule: "js_constructor", score: 80 };
  const prefix = BREAKOUT_PREFIX.exec(text);
  const code = prefix === null ? text : text.slice(prefix[0].length);
  if (GLOBAL_CALL.test(code)) return { rule: "js_global_call", score: 80 };
  const brokeOut = prefix !== null && prefix[0].trim().length > 0;
  // `print("Hello")` unprefixed is Python (or Ruby, Lua, PHP) code from a forum post; the page
  // printer that JavaScript's `print` opens ignores its arguments, so probes call `print()`.
  const python = !brokeOut && code.charCodeAt(0) === 112 /* p */ &&
    PRINT_WITH_ARGUMENT.test(code);
  const rest = python ? code.slice(5) : code;
  if (!python && SINK_START.test(code)) {
    // A bare `alert(` at the very start could be prose; after a breakout it is code.
    return { rule: "js_sink", score: brokeOut ? 80 : 70 };
  }
  if (SINK_AFTER_SEPARATOR.test(rest)) return { rule: "js_sink", score: 75 };
  if (code.length >= 24) {
    const symbols = code.match(JSFUCK_CHARS)?.length ?? 0;
    if (symbols / code.length >= 0.6 && code.includes("![]")) return { rule: "jsfuck", score: 80 };
  }
  return undefined;
}
