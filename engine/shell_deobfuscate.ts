/**
 * Undoes the obfuscations shells (and cmd.exe) remove before they run a command line:
 * quotes and backslashes inside words (`c'a't`, `c\\at`, `w^h^o^a^m^i`), empty parameters and
 * `${IFS}`, substring expansions, brace lists (`{cat,/etc/passwd}`) and terminal escapes, so
 * the command detector reads the words the shell will read.
 */

/** Shell obfuscations, undone before command positions are read. */
const IFS = /\$\{ifs\}|\$ifs(?:\$\d|\$\{\d\})?/g;
const SUBSTRING = /\$\{[a-z_]+:\d+:\d+\}/g;
const EMPTY_PARAM = /\$(?:@|\*|\{\d\}|\d(?=[a-z])|\(\))/g;
/**
 * Parameters that expand to nothing (or to nothing a word needs) inside a word: `c$_at`,
 * `c$!at`, `una$$me`, `cat$u` (an unset variable before a space or slash).
 */
const PARAM_IN_WORD = /(?<=[a-z])\$(?:[_!$]|[a-z](?=[\s/]|$))(?=[a-z/\s]|$)/g;
/**
 * An unset variable standing alone where a command starts (`;$a cat test.txt`): unquoted and
 * empty, it expands to no word at all, so the next word is the command the shell runs.
 */
const PARAM_BEFORE_COMMAND = /(?<=(?:^|[;&|\n(`])\s*)\$\{?[a-z_]\w{0,7}\}?[ \t]+(?=[a-z])/g;
/** `$SHELL -c ...`, `${BASH}`: the variables that name the running shell. */
const SHELL_VARIABLE = /\$\{?(?:shell|bash)\}?(?=[\s;|&]|$)/g;
const QUOTE_IN_WORD = /(?<=[a-z0-9_/.-])(?:''|""|'|")(?=[a-z0-9_/.-])/g;
const EMPTY_QUOTES = /''|""/g;
const LITERAL_NEWLINE = /\\[nr]/g;
/** cmd.exe's escape character inside a word (`w^h^o^a^m^i`). */
const CARET_IN_WORD = /(?<=[a-z0-9])\^+(?=[a-z0-9])/g;
/** A backslash before a letter, digit or backtick (`c\at`, an escaped backtick): the shell drops it. */
const BACKSLASH_IN_WORD = /\\(?=[a-z0-9`])/g;
/** A brace expansion with what is glued to it: `{cat,/etc/passwd}`, `{l,-lh}s`, `{,ifconfig}`. */
const BRACE_LIST = /\{((?:[\w./~?*-]*,)+[\w./~?*-]*)\}/y;
// deno-lint-ignore no-control-regex -- terminal escapes hide the command that follows
const ANSI = /\u001b\[[0-9;]*[a-z]?/g;

/** A shell variable assignment at a command position: `a=c`, `x=$'cat\x20/etc/passwd'`. */
const ASSIGNMENT =
  /(?:^|[;&|\n]\s*)([a-z_]\w{0,31})=(\$'[^']{0,256}'|'[^']{0,256}'|"[^"]{0,256}"|[^\s;&|'"`$]{0,256})/g;
const VARIABLE = /\$\{?([a-z_]\w{0,31})\}?/g;
const ANSI_C_ESCAPE = /\\x([0-9a-f]{2})|\\([0-7]{1,3})/g;
/** Assignments read from one value: a command is rarely built from more. */
const MAX_VARIABLES = 16;

/** A word in ANSI-C quotes anywhere (`;$'\151\144'` is `;id`): bash decodes its escapes. */
const ANSI_C_WORD = /\$'([^']{0,256})'/g;

/** The text of `$'...'` quotes: hexadecimal and octal escapes decoded, lower-cased. */
function ansiC(body: string): string {
  return body.replace(
    ANSI_C_ESCAPE,
    (_m, hex: string | undefined, octal: string | undefined) =>
      String.fromCharCode(hex !== undefined ? parseInt(hex, 16) : parseInt(octal ?? "0", 8)),
  ).toLowerCase();
}

/** The value an assignment gives, its quotes removed and `$'...'` escapes decoded. */
function assigned(raw: string): string {
  if (raw.startsWith("$'")) return ansiC(raw.slice(2, -1));
  const q = raw.charCodeAt(0);
  return q === 39 || q === 34 ? raw.slice(1, -1) : raw;
}

/**
 * Replaces variables the value itself assigned by their values: `a=c;b=at;$a$b /etc/passwd`
 * runs `cat`, whatever the words look like before.
 */
function substituteVariables(s: string): string {
  const vars = new Map<string, string>();
  for (const m of s.matchAll(ASSIGNMENT)) {
    vars.set(m[1]!, assigned(m[2]!));
    if (vars.size === MAX_VARIABLES) break;
  }
  if (vars.size === 0) return s;
  return s.replace(VARIABLE, (m, name: string) => vars.get(name) ?? m);
}

/** Lower-cases the value and undoes quoting, escaping and expansion tricks. */
export function deobfuscate(text: string): string {
  let s = text.toLowerCase();
  if (s.indexOf("\u001b") >= 0) s = s.replace(ANSI, "");
  if (s.indexOf("$") >= 0 && s.indexOf("=") >= 0) s = substituteVariables(s);
  if (s.indexOf("$'") >= 0) s = s.replace(ANSI_C_WORD, (_m, body: string) => ansiC(body));
  if (s.indexOf("$") >= 0) {
    s = s.replace(IFS, " ").replace(SUBSTRING, "/").replace(EMPTY_PARAM, "")
      .replace(PARAM_IN_WORD, "").replace(SHELL_VARIABLE, "sh").replace(PARAM_BEFORE_COMMAND, "");
  }
  if (s.indexOf("\\") >= 0) s = s.replace(LITERAL_NEWLINE, "\n").replace(BACKSLASH_IN_WORD, "");
  if (s.indexOf("^") >= 0) s = s.replace(CARET_IN_WORD, "");
  if (s.indexOf("'") >= 0 || s.indexOf('"') >= 0) {
    s = s.replace(EMPTY_QUOTES, "").replace(QUOTE_IN_WORD, "");
  }
  if (s.indexOf("{") >= 0) {
    s = expandBraces(s);
  }
  return s;
}

/** Characters of the words glued to a brace list (`{l,-lh}s`, `x{a,b}`). */
function isGlued(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95 || c === 46 || c === 47 ||
    c === 45;
}

/**
 * Bash's expansion of brace lists: every element between the text glued on both sides
 * (`{l,-lh}s` is `ls -lhs`). Each `{` is tried where it stands, so the scan stays linear.
 */
function expandBraces(s: string): string {
  let out = "";
  let copied = 0;
  for (let at = s.indexOf("{"); at >= 0; at = s.indexOf("{", at + 1)) {
    BRACE_LIST.lastIndex = at;
    const m = BRACE_LIST.exec(s);
    if (m === null) continue;
    let start = at;
    while (start > copied && isGlued(s.charCodeAt(start - 1))) start--;
    let end = BRACE_LIST.lastIndex;
    while (end < s.length && isGlued(s.charCodeAt(end))) end++;
    const before = s.slice(start, at);
    const after = s.slice(BRACE_LIST.lastIndex, end);
    const words: string[] = [];
    for (const element of m[1]!.split(",")) {
      const word = before + element + after;
      if (word.length > 0) words.push(word);
    }
    out += s.slice(copied, start) + words.join(" ");
    copied = end;
    at = end - 1;
  }
  return copied === 0 ? s : out + s.slice(copied);
}
