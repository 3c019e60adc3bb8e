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
import { gated } from "./literal_gate.ts";

/** What may precede the injected code: a quote closing the string, then `;`, an operator. */
const BREAKOUT_PREFIX =
  /^\s*(?:['"`]\s*[)}\]]*\s*)?(?:[;,+\-*/|&^%=?:]\s*|\binstanceof\s+|\bin\s+)*/;
/** Objects that expose the global scope; bracket access on them hides the called name. */
const GLOBAL_CALL =
  /^(?:window|self|top|parent|frames|globalThis|this|document|content|opener)\s*\[[^\]]{1,200}\]\s*(?:\[[^\]]{1,200}\]\s*)*\(/;
/** The Function constructor reached through any object: turns a string into code. */
const FUNCTION_CONSTRUCTOR = gated(
  /\bconstructor\s*\.\s*constructor\s*\(|\.constructor\s*\.\s*prototype\b|\bconstructor\s*\[\s*['"`]constructor|\.constructor\s*\(\s*['"`][^'"`]{0,200}\b(?:alert|prompt|confirm|eval|fetch|document|location|window)\b[^'"`]{0,200}['"`]\s*\)\s*\(/,
);
/**
 * A property read with a quoted name (`['constructor']`, `["filter"]`), which is the dotted
 * read (`.constructor`) spelled so that a filter looking for the dot does not see it.
 */
const QUOTED_PROPERTY = /\[\s*(['"`])([A-Za-z_$][\w$]{0,40})\1\s*\]/g;
/** Sinks that run or reveal code, called or aliased at the start of the injected code. */
const SINKS = "alert|prompt|confirm|eval|print|setTimeout|setInterval|Function|importScripts";
/**
 * How a sink is invoked: called (`alert(`, a tagged template), aliased (`;`, `,`), called
 * optionally (`alert?.(`) or through `Function.prototype` (`alert.call(null,1)`).
 */
const INVOKE = "\\s*(?:[(`;,]|\\?\\.\\s*\\(|\\.\\s*(?:call|apply|bind)\\s*\\()";
const SINK_START = new RegExp(`^(?:[\\w$]+\\s*=\\s*)?(?:${SINKS})${INVOKE}`);
/**
 * A module loaded from another host (`import('//evil.example/x.js')`): a script tag without
 * markup. With its scheme at the very start it is also how a code sample loads from a CDN.
 */
const REMOTE_IMPORT = /^import\s*\(\s*['"`]([a-z][\w+.-]*:)?\/\//i;
/**
 * A sink called right after a statement separator or a closed block (`}alert(1)`), passed
 * as a callback (`.find(alert)`), or called through parentheses (`(alert)(1)`); "(eval)" in a
 * sentence is neither.
 */
const SINK_AFTER_SEPARATOR = new RegExp(
  `(?:^|[;,])\\s*(?:${SINKS})\\s*[(\`]|\\bReflect\\s*\\.\\s*(?:apply|construct)\\s*\\(\\s*(?:${SINKS})\\s*,|\\}\\s*(?:alert|prompt|confirm)\\s*[(\`]|[\\w$.\\])]\\(\\s*(?:alert|prompt|confirm|eval)\\s*\\)|\\(\\s*(?:alert|prompt|confirm|eval)\\s*\\)\\s*[(\`]`,
);
/** `print` called with an argument: how other languages print, never a script probe. */
const PRINT_WITH_ARGUMENT = /^print\s*\(\s*[^\s)]/;
const JSFUCK_CHARS = /[[\]()!+{}]/g;
/** JSFuck's atoms: `![]` (false), `+[]` (0), `!+[]` (true), `[]+[]` (""). */
const JSFUCK_ATOM = /!\+?\[\]|\+\[\]/g;
/**
 * A DOM property that holds the session or the page's address, read or written from the
 * value's code (`document.cookie`, `(document)["cookie"]`, `window.location=`,
 * `document /*x*\/ . cookie`), or the document written to.
 */
const DOM_SINK =
  /(?:\b(?:document|window|self|top|parent|opener)|\(\s*(?:document|window|self|top)\s*\))\s*(?:\/\*[^*]{0,40}\*\/\s*)*(?:\.\s*(?:cookie|domain|location|write(?:ln)?\s*\(|documentURI|baseURI)\b|\[\s*['"`](?:cookie|location|domain|write)['"`]\s*\])/;
/** A DOM element's markup or text replaced from the value (`.innerHTML=`, `.textContent="x"`). */
const DOM_WRITE =
  /\bdocument\s*\.\s*(?:querySelector(?:All)?|getElementBy[A-Za-z]+|getElementsBy[A-Za-z]+|body)\b[^;]{0,80}?\.\s*(?:innerHTML|outerHTML|textContent|innerText|src|href)\s*=(?!=)/;
/**
 * A value that starts by indexing a global object with a string (`self["\x24"]`, which arrives
 * decoded as `self["$"]`): a property name spelled so that filters do not see it.
 */
const ESCAPED_GLOBAL =
  /^\(?\s*(?:window|self|top|parent|frames|globalThis|document)\s*\)?\s*\[\s*['"`]/;
/**
 * The Function constructor, or a sink placed into or called from a template literal's
 * placeholder (`${alert}`, `${alert(1)}`).
 */
const CODE_FROM_STRING =
  /\bnew\s+Function\s*\(|\$\{\s*(?:alert|prompt|confirm|eval|Function)\s*(?:\}|[(`])|\.\s*(?:call|apply)\s*`/;
/** Characters that border an expression in code rather than a word in a sentence. */
const CODE_EDGE = /[=;,()+[\]{}'"`:?&|!<>.]/;
/** Short values are probes and snippets; prose mentions `document.cookie` in longer text. */
const SHORT_CODE = 128;

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
  const dom = domAccess(text);
  if (!text.includes("(") && !text.includes("`")) return dom;
  const code = analyzeCall(text);
  return code === undefined || (dom !== undefined && dom.score > code.score) ? dom : code;
}

/**
 * DOM sinks and escaped global names (see {@link DOM_SINK}).
 *
 * @param text decoded value
 * @returns the verdict, or undefined
 */
export function domAccess(text: string): JsVerdict | undefined {
  if (text.includes("[") && ESCAPED_GLOBAL.test(text)) return { rule: "js_global_call", score: 75 };
  const document = text.indexOf("document") >= 0;
  if (document && DOM_WRITE.test(text)) return { rule: "js_dom", score: 75 };
  // A sink read in a longer text scores in the medium band at most: not worth its scan there.
  if (text.length > SHORT_CODE) return undefined;
  if (!document && !text.includes("window") && !text.includes("self") && !text.includes("top")) {
    return undefined;
  }
  const sink = DOM_SINK.exec(text);
  if (sink === null) return undefined;
  // In code the sink is the value, or stands between operators; in prose between words.
  const before = text.slice(0, sink.index).trimEnd();
  const after = text.slice(sink.index + sink[0].length).trimStart();
  const code = (before === "" || CODE_EDGE.test(before[before.length - 1]!)) &&
    (after === "" || CODE_EDGE.test(after[0]!));
  return { rule: "js_dom", score: code ? 70 : 50 };
}

/** A sink's call that a word of prose follows: a sentence about the function, not code. */
const PROSE_CALL = 45;
/** Characters of a call's argument list read to find its closing parenthesis. */
const MAX_CALL = 200;
/** A plain word after a call, on the same line: `not`, `may`; not `in`, `instanceof`. */
const WORD_AFTER = /^[ \t]+(?!in\b|instanceof\b)[a-z]{2,}\b/i;

/**
 * Whether a plain word follows, on the same line, the call whose match ends at `end` (just
 * after its `(`, or after the `)` of a callback): `alert() not showing in chrome`,
 * `, print (point) may`. JavaScript reads an identifier after a call on the same line as a
 * syntax error, so such a script runs nothing; code ends a call with `;`, `)`, an operator, a
 * comment, a newline or nothing.
 */
function wordFollows(text: string, end: number): boolean {
  let i = end;
  if (text.charCodeAt(end - 1) === 40 /* ( */) {
    let depth = 1;
    const stop = Math.min(text.length, end + MAX_CALL);
    for (; i < stop && depth > 0; i++) {
      const c = text.charCodeAt(i);
      if (c === 40) depth++;
      else if (c === 41) depth--;
      else if (c === 10 || c === 13) return false;
    }
    if (depth > 0) return false;
  }
  return WORD_AFTER.test(text.slice(i, i + 32));
}

function analyzeCall(text: string): JsVerdict | undefined {
  const fromString = text.includes("Function") || text.includes("${") || text.includes("`");
  if (fromString && CODE_FROM_STRING.test(text)) return { rule: "js_constructor", score: 75 };
  if (FUNCTION_CONSTRUCTOR.test(text)) return { rule: "js_constructor", score: 80 };
  // `[]['constructor']['constructor']('...')()`: the same reads with quoted names.
  if (text.includes("constructor") && text.includes("[")) {
    const dotted = text.replace(QUOTED_PROPERTY, ".$2");
    if (dotted !== text && FUNCTION_CONSTRUCTOR.test(dotted)) {
      return { rule: "js_constructor", score: 80 };
    }
  }
  const prefix = BREAKOUT_PREFIX.exec(text);
  const code = prefix === null ? text : text.slice(prefix[0].length);
  if (GLOBAL_CALL.test(code)) return { rule: "js_global_call", score: 80 };
  const brokeOut = prefix !== null && prefix[0].trim().length > 0;
  // `print("Hello")` unprefixed is Python (or Ruby, Lua, PHP) code from a forum post; the page
  // printer that JavaScript's `print` opens ignores its arguments, so probes call `print()`.
  const python = !brokeOut && code.charCodeAt(0) === 112 /* p */ &&
    PRINT_WITH_ARGUMENT.test(code);
  const rest = python ? code.slice(5) : code;
  const remote = python ? null : REMOTE_IMPORT.exec(code);
  if (remote !== null) {
    return { rule: "js_sink", score: brokeOut ? 80 : remote[1] === undefined ? 70 : PROSE_CALL };
  }
  const start = python ? null : SINK_START.exec(code);
  if (start !== null) {
    // A bare `alert(` at the very start could be prose; after a breakout it is code.
    if (wordFollows(code, start[0].length)) return { rule: "js_sink", score: PROSE_CALL };
    return { rule: "js_sink", score: brokeOut ? 80 : 70 };
  }
  const after = SINK_AFTER_SEPARATOR.exec(rest);
  if (after !== null) {
    const end = after.index + after[0].length;
    return { rule: "js_sink", score: wordFollows(rest, end) ? PROSE_CALL : 75 };
  }
  if (code.length >= 24) {
    const symbols = code.match(JSFUCK_CHARS)?.length ?? 0;
    if (symbols / code.length >= 0.6 && code.includes("![]")) return { rule: "jsfuck", score: 80 };
  } else if (code.length >= 10 && code.includes("[]")) {
    // `(![]+[])[+!+[]]`: a short expression of nothing but JSFuck's atoms.
    const symbols = code.match(JSFUCK_CHARS)?.length ?? 0;
    const atoms = code.match(JSFUCK_ATOM)?.length ?? 0;
    if (symbols === code.length && atoms >= 2) return { rule: "jsfuck", score: 75 };
  }
  return undefined;
}
