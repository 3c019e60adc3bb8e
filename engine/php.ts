/**
 * PHP code in a value, read as PHP's grammar reads it: open tags, calls of the functions an
 * injection needs (also with comments or quotes between the name and the parenthesis), the
 * calls PHP makes through a variable (`$fn(1)`, `${'a'}(2)`, `$__['o'](3)`, `@$___[@!+_](4)`),
 * through a string or a parenthesised expression (`"sys"."tem"('id');`, `(system)('id');`),
 * variable variables (`${$a}`), superglobals, the `php://` streams, and `php.ini` directives.
 *
 * Words alone are not code: a function name must be called, a short English-looking name
 * (`file`, `system`, `exec`) only with PHP-shaped arguments or without the space prose puts
 * before a parenthesis (`file (pdf)` passes, `exec\t(x)` does not).
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";
import { CONFIG_DIRECTIVES, EXTENSION_PREFIXES, FUNCTION_NAMES } from "./php_vocabulary.ts";
import { gated } from "./literal_gate.ts";

const escapeName = (name: string) => name.replaceAll(".", "\\.");
const byLength = (a: string, b: string) => b.length - a.length;

/**
 * `<?php`, `<?=`, a short open tag (`<? echo`, `<?\n`, a value that ends with `<?`), and the
 * `[php]...[/php]` tags of CMS plugins that evaluate PHP. An XML declaration (`<?xml `),
 * processing instructions (`<?xml-stylesheet href="a"?>`) and prose (`<? is odd`) are not.
 */
const OPEN_TAG =
  /<\?(?:php\b|=|\s*$|\s*\n|xml[^\s\w-]|\s*(?:echo|print|eval|system|exec|passthru|include|require)\b|\s*\$\w|\s*[a-z_]\w*\s*\()|\[\/?php\]/i;
/** Superglobals named without an index (`$_COOKIE=`, `$GLOBALS`): the index form is stronger. */
const SUPERGLOBAL =
  /\$(?:_(?:GET|POST|REQUEST|COOKIE|SERVER|FILES|ENV|SESSION)|GLOBALS|HTTP_(?:GET|POST|COOKIE|SERVER|ENV|POST_FILES|SESSION)_VARS)(?![\w[])/;
/**
 * `${'name'}`, `${$a}`, `${@$b}`, `$ { $a}`: variable variables, which only PHP writes (a
 * template's `${name}` and TeX's `$ {x}^2 $` have neither a quote nor a `$` inside).
 */
const VARIABLE_VARIABLE = /\$\s*\{\s*@?\s*(?:\$|["'][^"'\n]*["']\s*\})/;
/**
 * A variable, a variable variable or a braced expression, then indexes, members or comments.
 * The braces hold a quoted or `$` expression, or constants made only of underscores
 * (`${_.__}(30)`: PHP reads undefined constants as their names, so that names the variable `___`),
 * which only obfuscated code writes; a template's `${user.name}` is neither.
 */
const VARIABLE_CALL = new RegExp(
  "(\\$+)(?:[A-Za-z_\\x7f-\\uffff][\\w\\x7f-\\uffff]*|(\\s*\\{\\s*(?:[@$'\"][^{}\\n]{0,200}|_+(?:\\s*\\.\\s*_+)+\\s*|__+\\s*)\\}))" +
    "((?:\\s*(?:\\[(?:[^[\\]\\n]|\\[[^[\\]\\n]{0,50}\\]){0,100}\\]|\\{[^{}\\n]{1,100}\\}|->\\s*[\\w$]+|/\\*[^]{0,200}?\\*/|" +
    "//[^\\n]{0,200}\\n|#[^\\n]{0,200}\\n))*)(\\s*)\\(\\s*(\\)|[\"'$@\\d+-])?",
);
/**
 * Calls through a string or an expression once spaces and comments are gone (CRS 933210):
 * `(system)('id');`, `[system][0](ls);`, `"system"(ls);`, `(string)"sys"."tem"('id');`.
 */
const EXPRESSION_CALL =
  /(?:\((?:[\w"'.$[\]]|\([\w"'.$]*\))+\)|\[\d+\]|\{\d+\}|["'][A-Za-z_][\w\\]*["']|\([^()]*string[^()]*\)[\w"'.{}[\]]+)\([^;()]*\);/;
const COMMENT = /\/\*[^]*?\*\/|\s+/g;
/** The statement's end those calls need: `);`, spaces or comments between. */
const CALL_END = /\)\s*;/;
/** The `php://` streams that read the request or write the response, and code-running wrappers. */
const WRAPPER = gated(
  /\b(?:php:\/\/(?:std(?:in|out|err)|input|output|fd|memory|temp|filter)|(?:expect|phar|zlib|bzip2):\/\/)/i,
);

const NAMES = [...FUNCTION_NAMES].sort(byLength).join("|");
/**
 * A listed function called: the name not glued to an identifier, a member access or a
 * namespace (`.exec(`, `->system(`, `Foo::eval(` are methods), then spaces, comments or
 * quotes (`('system')('id')`), and the parenthesis.
 */
const FUNCTION_CALL = new RegExp(
  `(?:^|[^\\w$.>:\\\\])(${NAMES})((?:\\s|/\\*[^]{0,200}?\\*/|//[^\\n]{0,200}\\n|#[^\\n]{0,200}\\n|["'])*\\)?)\\(` +
    `\\s*(\\)|["'\`$@\\d]|[a-z_]\\w*\\s*\\()?`,
  "i",
);
/** A whole value that is one call of an identifier ending in a listed name (`FOOgzdecode()`). */
const GLUED_CALL = new RegExp(`^\\s*[A-Za-z_]\\w*?(${NAMES})\\s*\\(`, "i");
/** An extension's function called with PHP's arguments (`tidy_parse_string()`, `array_diff (`). */
const EXTENSION_CALL = new RegExp(
  `(?:^|[^\\w$.>:\\\\])(?:${
    EXTENSION_PREFIXES.join("|")
  })_[a-z0-9_]+\\s*\\(\\s*(?:\\)|["'$@\\d]|$)`,
  "i",
);
const IDENTIFIER_CALL = /^\s*[A-Za-z_]\w*\s*\(/;
const LISTED: ReadonlySet<string> = new Set(FUNCTION_NAMES);
/**
 * Whether a character is in `\s` (JavaScript's white space and line terminators), or one of
 * the quotes and the closing parenthesis that may stand between a name and its `(`.
 */
function isGap(c: number): boolean {
  if (c === 32 || c === 34 || c === 39 || c === 41 || (c >= 9 && c <= 13)) return true;
  if (c < 0xa0) return false;
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 ||
    c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** `\w` (ASCII letters, digits, `_`). */
function isWord(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}

/** The longest listed name, so a longer word before a parenthesis is no candidate. */
const LONGEST = FUNCTION_NAMES.reduce((n, f) => Math.max(n, f.length), 0);

/**
 * Whether a listed function can be called in `text`: one compare a name before a parenthesis
 * instead of the whole list at every position. Comments between a name and its parenthesis
 * (`exec /* x *\/ (`) leave it to the full expression.
 *
 * The name is read backwards from each `(`: over the quotes, spaces and `)` between, then the
 * run of word characters, less its leading digits. That is the name `([A-Za-z_]\w*)["'\s)]*\(`
 * finds for that parenthesis scanning forwards (its gap holds no `(`, so each parenthesis ends
 * at most one such match), without retrying the pattern from every letter of every word.
 */
function mayCallListed(text: string): boolean {
  if (text.indexOf("/*") >= 0 || text.indexOf("//") >= 0 || text.indexOf("#") >= 0) return true;
  for (let q = text.indexOf("("); q >= 0; q = text.indexOf("(", q + 1)) {
    let i = q - 1;
    while (i >= 0 && isGap(text.charCodeAt(i))) i--;
    const end = i + 1;
    while (i >= 0 && isWord(text.charCodeAt(i))) i--;
    let start = i + 1;
    while (start < end && text.charCodeAt(start) <= 57) start++; // digits: `\w` less `[A-Za-z_]`
    if (start < end && end - start <= LONGEST && LISTED.has(text.slice(start, end).toLowerCase())) {
      return true;
    }
  }
  return false;
}

/** Listed names that are also English words: prose writes `file (pdf)`, `system (beta)`. */
const WORDS: ReadonlySet<string> = new Set([
  "file",
  "exec",
  "system",
  "eval",
  "glob",
  "assert",
  "unpack",
  "chr",
]);
/** A gap before the parenthesis that prose does not write: nothing, a tab, a newline, a comment. */
const PROSE_GAP = /^ +$/;
/** Words followed by a space and another word: what a sentence is made of. */
const PROSE_WORD = /[A-Za-z]{2,}(?= [A-Za-z])/g;
const PROSE_WORDS = 6;

/**
 * How many words of a sentence `text` has, counted up to six.
 *
 * @param text the text
 */
export function proseWords(text: string): number {
  let n = 0;
  PROSE_WORD.lastIndex = 0;
  while (n < PROSE_WORDS && PROSE_WORD.exec(text) !== null) n++;
  return n;
}

/** Arguments and the closing parenthesis after `name(`: `exec(blah)`, not a lone `eval(`. */
const ARGUMENTS = /^\s*[^\s)][^)]{0,200}\)/;

const DIRECTIVES = [...CONFIG_DIRECTIVES].sort(byLength).map(escapeName).join("|");
/** The dotted directives' sections (`opcache.`, `session.`), which newer PHP versions extend. */
const SECTIONS = [
  ...new Set(CONFIG_DIRECTIVES.filter((d) => d.includes(".")).map((d) => d.split(".")[0]!)),
].join("|");
/**
 * A value that sets a directive (`allow_url_include=1`, `opcache.jit=off`, `memory_limit = 512M`)
 * or a `-d` option of php-cgi (`-d auto_prepend_file=php://input`, CVE-2012-1823).
 */
const DIRECTIVE_VALUE = new RegExp(
  `^\\s*(?:${DIRECTIVES}|(?:${SECTIONS})\\.\\w+)\\s*=\\s*\\S`,
  "i",
);
const DIRECTIVE_OPTION = new RegExp(`(?:^|\\s)-d\\s*(?:${DIRECTIVES})\\s*=`, "i");

/**
 * Reports PHP code in a value.
 *
 * @param value the decoded input
 * @param text the text to read (the decoded value, clipped)
 * @returns the strongest finding, class `php`
 */
export function phpCode(value: DetectorInput, text: string): Finding | undefined {
  let best: Finding | undefined;
  const lt = text.indexOf("<?") >= 0 || text.indexOf("php]") >= 0 || text.indexOf("PHP]") >= 0;
  const tag = lt ? OPEN_TAG.exec(text) : null;
  if (tag !== null) best = makeFinding(value, "php", 85, "php.open_tag", text, tag.index);
  const dollar = text.indexOf("$") >= 0;
  if (dollar) best = stronger(best, variables(value, text));
  const paren = text.indexOf("(") >= 0;
  if (paren) {
    best = stronger(best, functionCall(value, text));
    const reflected = text.indexOf("Reflection") >= 0 ? REFLECTED_CALL.exec(text) : null;
    if (reflected !== null) {
      best = stronger(
        best,
        makeFinding(value, "php", 85, "php.reflection_call", text, reflected.index),
      );
    }
    if (text.indexOf(";") >= 0 && (CALL_END.test(text) || text.indexOf("/*") >= 0)) {
      const compact = text.replace(COMMENT, "");
      const call = EXPRESSION_CALL.exec(compact);
      if (call !== null) {
        best = stronger(
          best,
          makeFinding(value, "php", 85, "php.expression_call", compact, call.index),
        );
      }
    }
  }
  if (text.indexOf("://") >= 0) {
    const wrapper = WRAPPER.exec(text);
    if (wrapper !== null) {
      best = stronger(best, makeFinding(value, "php", 85, "php.wrapper", text, wrapper.index));
    }
  }
  if (text.indexOf("=") >= 0) {
    const option = text.indexOf("-d") >= 0 ? DIRECTIVE_OPTION.exec(text) : null;
    if (option !== null) {
      best = stronger(best, makeFinding(value, "php", 88, "php.ini_option", text, option.index));
    } else if (DIRECTIVE_VALUE.test(text)) {
      best = stronger(best, makeFinding(value, "php", 75, "php.ini_directive", text, 0));
    }
  }
  return best;
}

/** A quoted argument closed and followed by `,` or `)`; another argument then a `)`. */
const QUOTED_ARGUMENT = { '"': /^"[^"\n]{0,200}"\s*[,)]/, "'": /^'[^'\n]{0,200}'\s*[,)]/ };
const OTHER_ARGUMENTS = /^[^()\n;]{0,200}\)/;

/** Whether the argument list opened before `at` (where `literal` starts) closes as a call's. */
function closesCall(text: string, at: number, literal: string): boolean {
  const rest = text.slice(at, at + 256);
  const quoted = QUOTED_ARGUMENT[literal as keyof typeof QUOTED_ARGUMENT];
  return (quoted ?? OTHER_ARGUMENTS).test(rest);
}

function variables(value: DetectorInput, text: string): Finding | undefined {
  let best: Finding | undefined;
  const call = VARIABLE_CALL.exec(text);
  if (call !== null) {
    // Braces, `$$`, an index, a member or a comment before the call are PHP's alone; a plain
    // `$name(` needs a literal argument: `$http({...})` (AngularJS) and `$USD (approx)` pass.
    const [, dollars, braced, suffix, gap, literal] = call;
    const strong = braced !== undefined || dollars!.length > 1 || suffix !== "";
    // The plain call's argument list must close (`$a("id")`, `$f($x, 1)`): `$Wrq("zC~...` in
    // a bot manager's cipher text opens a string that never ends where a call would.
    const closed = literal !== undefined &&
      (literal === ")" || closesCall(text, call.index + call[0].length - 1, literal));
    const score = strong || (closed && gap === "") ? 85 : literal ? 60 : 0;
    if (score > 0) best = makeFinding(value, "php", score, "php.variable_call", text, call.index);
  }
  const vv = text.indexOf("{") >= 0 ? VARIABLE_VARIABLE.exec(text) : null;
  if (vv !== null) {
    best = stronger(best, makeFinding(value, "php", 80, "php.variable_variable", text, vv.index));
  }
  const letterless = text.indexOf("$_") >= 0 ? letterlessCode(text) : -1;
  if (letterless >= 0) {
    best = stronger(best, makeFinding(value, "php", 85, "php.letterless", text, letterless));
  }
  const sg = text.indexOf("$_") >= 0 || text.indexOf("$G") >= 0 || text.indexOf("$H") >= 0
    ? SUPERGLOBAL.exec(text)
    : null;
  if (sg !== null) {
    best = stronger(best, makeFinding(value, "php", 75, "php.superglobal", text, sg.index));
  }
  return best;
}

/**
 * A function that runs commands or code reached through reflection (`new ReflectionFunction(
 * 'system')`, then `->invoke('id')`), which no call of the name itself shows.
 */
const REFLECTED_CALL =
  /\bnew\s+Reflection(?:Function|Method)\s*\(\s*["'](?:system|exec|shell_exec|passthru|popen|proc_open|pcntl_exec|assert|create_function|call_user_func(?:_array)?|file_put_contents|include|require)["']/i;
/** A variable named by underscores alone (`$_`, `$___`), and one assigned. */
const UNDERSCORE_VARIABLE = /\$_+(?![\w\x7f-\uffff])/g;
const UNDERSCORE_ASSIGNED = /\$_+\s*(?:=(?!=)|\+\+|\.=)/;
/** Letters (and digits) in a letterless shell: at most this share of its characters. */
const LETTER_SHARE = 0.1;
const LETTER = /[A-Za-z0-9]/g;
const BLANKS = /\s+/g;

/**
 * Where PHP written without letters starts (`$_=[];$_=@"$_";$_=$_['!'=='@'];$___=$_;...`), or
 * -1: three underscore variables or more, one assigned, and hardly a letter in the value. The
 * shells that build `system` from `"Array"[3]` and `++` are written so that no word is left for
 * a filter to find; Perl's `$_` comes with Perl's words.
 */
function letterlessCode(text: string): number {
  if (text.length > 4096) return -1;
  const vars = text.match(UNDERSCORE_VARIABLE);
  if (vars === null || vars.length < 3 || !UNDERSCORE_ASSIGNED.test(text)) return -1;
  const letters = text.match(LETTER)?.length ?? 0;
  const visible = text.replace(BLANKS, "").length;
  return letters <= visible * LETTER_SHARE ? text.indexOf("$_") : -1;
}

function functionCall(value: DetectorInput, text: string): Finding | undefined {
  const m = mayCallListed(text) ? FUNCTION_CALL.exec(text) : null;
  if (m !== null) {
    const name = m[1]!.toLowerCase();
    const gap = m[2]!;
    const shaped = m[3] !== undefined;
    const word = WORDS.has(name);
    // An English-looking name needs PHP's arguments, or a gap and arguments prose does not write.
    if (
      !word || shaped ||
      (gap !== "" && !PROSE_GAP.test(gap)) ||
      (gap === "" && ARGUMENTS.test(text.slice(m.index + m[0].length)))
    ) {
      // Prose around a call is no program PHP would parse: a tutorial's `strlen($s)` is medium.
      const score = proseWords(text) >= PROSE_WORDS ? 55 : 80;
      return makeFinding(value, "php", score, "php.function_call", text, m.index);
    }
  }
  // Any extension's function in a value of code alone is what CRS paranoia level 2 flags.
  const ext = text.length <= 512 && text.indexOf("_") >= 0 ? EXTENSION_CALL.exec(text) : null;
  if (ext !== null && proseWords(text) < 3) {
    return makeFinding(value, "php", 50, "php.extension_call", text, ext.index);
  }
  const glued = text.length <= 128 && IDENTIFIER_CALL.test(text) ? GLUED_CALL.exec(text) : null;
  return glued !== null && glued[1]!.length >= 6 && !WORDS.has(glued[1]!.toLowerCase())
    ? makeFinding(value, "php", 75, "php.function_call", text, 0)
    : undefined;
}
