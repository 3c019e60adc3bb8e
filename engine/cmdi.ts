/**
 * OS command injection detector.
 *
 * A command word only runs when it stands in command position: at the start of the value,
 * after a separator (`;`, `|`, `||`, `&&`, `&`, newline) or inside a substitution (`$(...)`,
 * backticks). The detector undoes the shell's own obfuscations first (`c'a't`, `c\at`,
 * `${IFS}`, `{cat,/etc/passwd}`, `$@`), then reads each command position and judges the
 * word by how telling it is and by the shape of its arguments, so `;sleep 5` is an attack
 * while "cat and dog; sleep well" is prose.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";
import { MAX_TEXT } from "./limits.ts";
import {
  commandKind,
  FILE_COMMANDS,
  isCompound,
  META_COMMANDS,
  NETWORK_COMMANDS,
  RUNNER_COMMANDS,
  SUBCOMMANDS,
  WINDOWS_NAMES,
} from "./shell_commands.ts";
import { judgeWindows } from "./windows_cmd.ts";
import { deobfuscate } from "./shell_deobfuscate.ts";
import { GLOB } from "./shell_glob.ts";
import { Args, endsSegment, Scan } from "./shell_scan.ts";
import { factorAlternation } from "./regex_factor.ts";
import { gated } from "./literal_gate.ts";

const MAX_CHARS = MAX_TEXT;

/** Characters that can put a word in command position, or a start that could be one. */
const GATE = /[;|&`$\n\r{]|\\n|[<>]\(|\(\s*\)|^\s*(?:['"]\s*)?[a-z/%~!]/i;

/** `() {`: the opening every shell function definition has. */
const FUNCTION_BODY = /\(\s*\)\s*\{/;
const SHELLSHOCK = /\(\s*\)\s*\{\s*[:\w]*\s*;?\s*\}\s*;/;
/**
 * A value that opens with a function definition (`() {`): what bash before 4.3 imported from
 * any environment variable, so CGI headers, parameters and keys carried Shellshock. Nothing
 * else starts a value that way (an arrow function is `() =>`).
 */
const SHELLSHOCK_START = /^\s*\(\s*\)\s*\{/;
/** A fork bomb: a function that pipes itself into itself in the background (`:(){ :|:& };:`). */
const FORK_BOMB = /([\w.:]{1,32})\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&?\s*;?\s*\}/;
/**
 * Shell syntax that is command execution whatever the words: an `alias` definition, a
 * directory-stack tilde (`~+`, `~-2`) or a history reference (`!-1`) forming the value, and
 * the SQLite shell's `.shell` and `.system` dot commands at a line start.
 */
const ALIAS = /(?:^|[;&|\n`(]\s*)alias\s+[^\s=;&|]{1,32}=/i;
const TILDE = /^\s*~(?:[+-]\d*|(\d+))\s*$/;
const HISTORY = /^\s*!-\d+(?:!-?\d+)*\s*$/;
const DOT_COMMAND = /(?:^|[\n;]|\\n)\s*\.(?:shell|system)\s+\S/;
/**
 * Bash parameter expansion with an operator (`${x#pattern}`, `${PATH##*:}`, `${v^^}`,
 * `${!prefix*}`): no template language writes these. The default forms (`${PORT:-8080}`)
 * also appear in configuration, so they are a medium signal.
 */
const PARAM_EXPANSION = /\$\{(?:#?[a-z_]\w*(?:\[[^\]]*\])?(?:##?|%%|\^\^?|,,)|![a-z_]\w*[@*]?\})/i;
const PARAM_DEFAULT = /\$\{[a-z_]\w*:[-=?+]/i;
/**
 * Parameter names that hand their value to a shell or a program's argument list: at the start
 * of such a value a command word stands in command position as surely as after `;`.
 */
const COMMAND_PARAM =
  /(?:^|[^a-z])(?:cmd|cmds|command|commands|exec|execute|run|shell|code|arg|args|argv|rce|cli|sh|bash)(?:$|[^a-z])/i;
/** A brace expansion opening the value (`{,ifconfig}`, `{l,-lh}s`): it builds a command word. */
const BRACE_START = /^\s*[\w./-]*\{[\w./~?*-]*,/;
const REVERSE_SHELL =
  /(?:^|[\s"'=])(?:ba|da|k|z)?sh,-c,|\/dev\/(?:tcp|udp)\/|\b(?:ba|z|k)?sh\s+-i\b|\bnc(?:at)?\s+(?:-\w+\s+)*-[a-z]*e\s|\bmkfifo\s|[0-9]>&[0-9]?\s*$|-e\s+\/bin\/(?:ba)?sh\b|\bsocat\b[^\n]{0,200}?\b(?:exec|system):/i;
/** Options of git, ssh and friends that take a command to run (argument injection). */
const COMMAND_OPTION =
  /(?:^|\s)(?:--(?:open-files-in-pager|upload-pack|receive-pack|exec|ext-diff)|-o\s*proxycommand|-o\s*localcommand)\s*=/i;
/** Anything that opens a command position after the start of the value ({@link hasSeparator}). */
const SEPARATOR_CHAR = /[;|&`\n\r]/;
const SUBSTITUTION = gated(/[$<>]\(/);
const LITERAL_BREAK = gated(/\\[nr]/i);
const IFS_WORD = /\$\{?ifs/i;
const BRACE_WORDS = /\{[\w./~?*-]*,/;

/**
 * The separators' alternatives one at a time, each only when its leading character is in
 * the text: one alternation of them all was the scan's most expensive regex on long values.
 */
function hasSeparator(t: string): boolean {
  return SEPARATOR_CHAR.test(t) || (t.indexOf("(") >= 0 && SUBSTITUTION.test(t)) ||
    (t.indexOf("\\") >= 0 && LITERAL_BREAK.test(t)) || (t.indexOf("$") >= 0 && IFS_WORD.test(t)) ||
    (t.indexOf("{") >= 0 && BRACE_WORDS.test(t));
}

/**
 * Literals one of the exploit-shape regexes needs; most values have none (`nc` only as the
 * word netcat is, or every "once" and "since" of a text would run them all).
 */
const SPECIAL_HINT = factorAlternation(
  /\/dev\/|sh\s+-i|sh,-c,|-exec|\bnc(?:at)?\s|mkfifo|socat|>&|comspec|cmd|powershell|iex|invoke-|--[a-z]|-o\s*[pl]/i,
);
const IFS_TRICK = /\$\{?ifs\}?|\$\{path:0:1\}|\$\{home:0:1\}/i;
const WINDOWS_SHELL =
  /%comspec%|\bcmd(?:\.exe)?\s+\/[ck]\s|\bpowershell(?:\.exe)?\s+(?:-|\/)(?:e|enc|encodedcommand|c|command|nop|noprofile|w|windowstyle|exec|ep)\b|\biex\s*\(|\binvoke-(?:expression|webrequest)\b/i;

/** Common commands that do their harm without arguments (`;id`, `|pwd|`). */
const BARE_COMMANDS: ReadonlySet<string> = new Set([
  "id",
  "pwd",
  "ls",
  "dir",
  "ps",
  "env",
  "ver",
  "arp",
  "df",
  "set",
  "w",
  "who",
  "route",
  "history",
]);

/** Distinct commands that, alone as the whole value, are still a probe (not a tag or a name). */
export const BARE_AT_START: ReadonlySet<string> = new Set([
  "whoami",
  "ifconfig",
  "ipconfig",
  "systeminfo",
  "sysinfo",
  "netstat",
  "uname",
  "tasklist",
  "printenv",
]);

/** Commands whose argument is a count or a duration. */
const NUMERIC_COMMANDS: ReadonlySet<string> = new Set(["sleep", "ping", "timeout"]);
const DIGIT = /^\d/;

/** A library entry point (`x.dll,Entry`) or an executable or script file. */
const PROGRAM_FILE = /\.dll,|^[\w.\\/:~-]+\.(?:exe|bat|cmd|ps1|vbs|vbe|hta|scr|msi|dll|cpl|sct)$/;

/**
 * Options of common programs that run a command (GTFOBins shapes): `tar --checkpoint-action=
 * exec=`, `tar --to-command=`, `find -exec ... ;`.
 */
const RUNS_OPTION =
  /--checkpoint-action\s*=\s*exec|--to-command\s*=|--use-compress-program\s*=|(?:^|\s)-exec(?:dir)?\s+\S[^\n]{0,200}?(?:\\;|\s\+)(?:\s|$)/i;

/** A switch glued to a Windows command (`bcdboot/r`, `cmd/c`, `ipconfig/all`). */
const GLUED_SWITCH = /^\/[a-z?]{1,12}$/;
/** A redirection operator standing alone. */
const LONE_ANGLE = /^[<>]{1,2}$/;
/** A program named by its path alone: `/bin/ab`, `bin/ansible`, `/usr/[a-z]in/bash`. */
const PROGRAM_PATH = /^(?:\/|(?:s?bin|usr)\/)[\w/?*[\]!.+-]*$/;

/** Arguments after the first that are read for their strength. */
const MAX_JUDGED_ARGS = 8;

/** A mode `chmod` takes: `+x`, `u+rwx`, `755`, `4755`. */
const CHMOD_MODE = /^(?:[ugoa]*[-+=][rwxXst]+|[0-7]{3,4})$/;

/** A dotted host name (`evil.test`, `x.oast.site`): what a network command is pointed at. */
const HOST_NAME = /^(?:[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}\.?$/;

/**
 * An arithmetic expansion (`$((1+1))`, `$((7*7))`): numbers or names joined by operators and
 * closed by `))` right after them. Only a shell reads it (inside a double-quoted argument too),
 * and what it computes shows up in the answer, which is what a probe wants to see; a price in
 * parentheses (`$((5+3)*2)`, `$((10))`) has no operator before its first `)` or none at all.
 */
const ARITHMETIC =
  /\$\(\(\s*[-+~!]?\s*(?:\d+|[a-z_]\w*)(?:\s*(?:\*\*|<<|>>|[-+*\/%^&|])\s*[-+~!]?\s*(?:\d+|[a-z_]\w*))+\s*\)\)/i;

/** An arithmetic expansion alone: high, since nothing but a shell (or a probe of one) writes it. */
const ARITHMETIC_SCORE = 72;

/** An absolute, drive or variable path as first argument (`cat /etc/x`, `dir c:\`). */
const PATH_ARG = /^(?:\/|[a-z]:|%[a-z_]+%|~\/)/;

/**
 * Where a command word stands: after `;`, `|`, `&&` (strong), at a line start, after a lone
 * `&` with no space (amp: also a query-string separator), at the value's start, or opening a
 * substitution (`` `id` ``, `$(id)`), which runs whatever follows its closing character.
 */
type Context = "strong" | "line" | "amp" | "start" | "subst" | "param";

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 11 || c === 12;
}

/** How a path that can name a program starts: `/`, `~/`, `./`, `../`. */
const ROOTED = /^(?:\/|~\/|\.{1,2}\/)/;

/** Characters that end a command word. */
function endsWord(c: number): boolean {
  // space, tab, ; | & newline CR ` ' " ( ) < > { } =
  return c !== c || isSpace(c) || c === 59 || c === 124 || c === 38 || c === 10 || c === 13 ||
    c === 96 || c === 39 || c === 34 || c === 40 || c === 41 || c === 60 || c === 62 ||
    c === 123 || c === 125 || c === 61;
}

function isQuote(c: number): boolean {
  return c === 39 || c === 34;
}

/**
 * How strongly one argument says "command line": 2 for flags, absolute or drive paths,
 * variables, URLs, addresses and globs; 1 for numbers, file names, quoted strings and
 * command names; 0 for a plain word.
 */
function argStrength(arg: string, command: string): number {
  const c0 = arg.charCodeAt(0);
  if (c0 === 45 /* - */) return /^--?[a-z0-9]/.test(arg) ? 2 : 0;
  if (c0 === 47 /* / */) return 2;
  if (c0 === 126 /* ~ */ || c0 === 36 /* $ */ || c0 === 37 /* % */ || c0 === 42 /* * */) return 2;
  // A lone `>` is as often a prompt (`mysql> select`) as a redirection without its file.
  if (c0 === 62 || c0 === 60) return LONE_ANGLE.test(arg) ? 1 : 2;
  if (/^[a-z]:(?:$|[\\/a-z%])/.test(arg)) return 2;
  if (/^\.\.?\//.test(arg) || /^[a-z][a-z0-9+.-]*:\/\//.test(arg)) return 2;
  if (/^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?$/.test(arg)) return 2;
  // `shell32.dll,Control_RunDLL`: an entry point of a library, as rundll32 takes it; a program
  // or script file to start (`calc.exe`, `a.ps1`).
  if (PROGRAM_FILE.test(arg)) return 2;
  const sub = SUBCOMMANDS.get(command);
  if (sub !== undefined && sub.has(arg)) return 2;
  if (NETWORK_COMMANDS.has(command) && HOST_NAME.test(arg)) return 2;
  if (/^\d+(?:\.\d+)?[smhd]?$/.test(arg)) return 1;
  if (c0 === 39 || c0 === 34) return 1;
  if (FILE_COMMANDS.has(command) && /^[\w.-]+\.[a-z0-9]{1,5}$/.test(arg)) return 1;
  if (META_COMMANDS.has(command) && commandKind(arg) !== undefined) return 1;
  if (command === "chmod" && CHMOD_MODE.test(arg)) return 1;
  if (arg.indexOf("*") >= 0) return 2;
  return 0;
}

/** Reads the command word at `from`; returns its name without path and `.exe`, and its end. */
function readWord(
  scan: Scan,
  from: number,
): { name: string; end: number; path: boolean; glued?: boolean } | undefined {
  const s = scan.s;
  let end = from;
  while (end < s.length && !endsWord(s.charCodeAt(end))) end++;
  if (end === from) return undefined;
  let word = s.slice(from, end);
  const slash = word.lastIndexOf("/");
  if (slash >= 0) {
    const last = word.slice(slash + 1);
    // `bcdboot/r`, `cmd/c`: cmd.exe reads a switch glued to the command name.
    const first = word.indexOf("/");
    if (
      first > 0 && WINDOWS_NAMES.has(word.slice(0, first)) && GLUED_SWITCH.test(word.slice(first))
    ) {
      return { name: word.slice(0, first), end: from + first, path: false, glued: true };
    }
    // `/usr/bin/id` names a program; `curl/7.68` (a user agent) and `/api/ping` do not.
    if (word.indexOf("bin/") < 0 && word.indexOf("system32/") < 0) {
      // `/???/c?t`, `/b*/n[c]`, `/bi[n]/bash`: the shell expands a wildcard path first. Only a
      // path from the root, the home or the working directory names a program wherever the
      // command runs; `sd!/?` in cipher text names none.
      if (!GLOB.test(word) || !ROOTED.test(word)) return undefined;
      const globbed = GLOB.test(last)
        ? scan.globbed(last)
        : commandKind(last) !== undefined
        ? last
        : undefined;
      return globbed === undefined ? undefined : { name: globbed, end, path: true };
    }
    // `/bin/c?t`: a wildcard in the program's own name is expanded the same way.
    word = GLOB.test(last) ? scan.globbed(last) ?? last : last;
  }
  if (word.endsWith(".exe")) word = word.slice(0, -4);
  return { name: word, end, path: slash >= 0 };
}

/** True when nothing command-breaking follows the segment: end, quotes, a comment or a command. */
function tailIsShell(scan: Scan, segEnd: number): boolean {
  const s = scan.s;
  let i = segEnd;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (
      isSpace(c) || c === 39 || c === 34 || c === 59 || c === 124 || c === 38 || c === 10 ||
      c === 13 || c === 96 || c === 41
    ) {
      i++;
      continue;
    }
    if (c === 35 /* # */) return true;
    const next = readWord(scan, i);
    return next !== undefined && commandKind(next.name) !== undefined;
  }
  return true;
}

/** How far back a quoted CSV field's opening quote is looked for. */
const MAX_CSV_FIELD = 256;

/**
 * True when `"word"` (opening quote at `open`, closing at `close`) is a field of a line of
 * quoted CSV fields separated by `;` (Excel's export in much of Europe): `"id";"date";"amount"`
 * names columns, it runs nothing. The field next to it must be quoted too, whole: `x";"id"`
 * (a breakout from a quoted argument) and `x;"id"` stay commands.
 */
function csvField(s: string, open: number, close: number): boolean {
  if (s.charCodeAt(open) !== 34 || s.charCodeAt(close) !== 34) return false;
  const after = s.charCodeAt(close + 1);
  const ends = close + 1 === s.length || after === 10 || after === 13;
  if (!ends && after !== 59) return false;
  const before = s.charCodeAt(open - 1);
  if (open === 0 || before === 10 || before === 13) {
    // The line's first field: the next one must be quoted.
    return after === 59 && s.charCodeAt(close + 2) === 34;
  }
  if (before !== 59 || s.charCodeAt(open - 2) !== 34) return false;
  const stop = Math.max(0, open - 2 - MAX_CSV_FIELD);
  for (let q = open - 3; q >= stop; q--) {
    const c = s.charCodeAt(q);
    if (c === 10 || c === 13) return false;
    if (c !== 34) continue;
    const lead = s.charCodeAt(q - 1);
    return q === 0 || lead === 59 || lead === 10 || lead === 13;
  }
  return false;
}

/**
 * Whether a command word of one or two letters (`w`, `id`, `ls`, `df`) ends where the shell
 * would end it: at a blank, a separator, the end, the close of its substitution, or an output
 * redirection to a path (`;id>/tmp/x`). Cipher text (bot-manager sensor data) puts such words
 * after a `;`, `|` or backtick by chance about once in five blobs of 2,000 characters, followed
 * by any punctuation (`;w(`, `` `w) ``, `|w>$x]`), which no shell runs.
 */
function shortWordEnds(s: string, from: number, end: number): boolean {
  if (end >= s.length) return true;
  const c = s.charCodeAt(end);
  if (isSpace(c) || c === 59 || c === 124 || c === 38 || c === 10 || c === 13 || c === 96) {
    return true;
  }
  // `)` closes only the `$(` the word was read after.
  if (c === 41) return s.charCodeAt(from - 1) === 40;
  if (c === 62) {
    const next = s.charCodeAt(end + 1);
    return next === 47 || next === 38 || next === 62 || isSpace(next) || next !== next;
  }
  // A quote that closes the application's own string (`x';id'`) ends the word; one followed by
  // more text continues it (`w"$<a8` is the one word `w$<a8`).
  return (c === 39 || c === 34) && shortWordEnds(s, from, end + 1);
}

/** Scores the simple command starting at `from` in context `ctx`. */
function judgeCommand(scan: Scan, from: number, ctx: Context): number {
  const s = scan.s;
  let p = from;
  while (p < s.length && (isSpace(s.charCodeAt(p)) || s.charCodeAt(p) === 123)) p++;
  // A quoted command word is the same word to the shell (`;"i"d` is `;id`).
  let quoted = false;
  while (
    p < s.length && (s.charCodeAt(p) === 39 || s.charCodeAt(p) === 34 || isSpace(s.charCodeAt(p)))
  ) quoted = !isSpace(s.charCodeAt(p++)) || quoted;
  let word = readWord(scan, p);
  if (word === undefined) return 0;
  if (quoted && p === from + 1 && csvField(s, from, word.end)) return 0;
  // ...unless text follows its closing quote: `"type":"x"` is the one word `type:x` (JSON).
  if (quoted && ctx !== "start" && isQuote(s.charCodeAt(word.end))) {
    const after = s.charCodeAt(word.end + 1);
    if (!isSpace(after) && !endsSegment(after) && after === after) return 0;
  }
  // `sudo`, `busybox`, `env` run the command that follows them: judge that one.
  let ran = false;
  while (RUNNER_COMMANDS.has(word.name)) {
    let q = word.end;
    while (q < s.length && isSpace(s.charCodeAt(q))) q++;
    const next = readWord(scan, q);
    if (next === undefined || commandKind(next.name) === undefined || next.end === q) break;
    word = next;
    ran = true;
  }
  const kind = commandKind(word.name);
  if (kind === undefined) return 0;
  if (word.name.length <= 2 && !word.path && !shortWordEnds(s, from, word.end)) return 0;
  if (s.charCodeAt(word.end) === 61 /* = */) return 0; // `id=5` is an assignment or a pair
  if (ctx === "amp" && p === from && word.end === s.length) return kind === "distinct" ? 70 : 0;
  const segEnd = scan.segmentEnd(word.end);
  const args = new Args(s, word.end, segEnd);
  // `/usr/bin/id` names a program by its path: no prose does that.
  const distinct = kind === "distinct" || word.path;
  const closed = ctx === "subst" && (s.charCodeAt(segEnd) === 96 || s.charCodeAt(segEnd) === 41);
  // `;id #`: a comment ends the command's arguments.
  if (args.start >= segEnd || s.charCodeAt(args.start) === 35) {
    if (closed) return distinct ? 90 : 85;
    const tail = tailIsShell(scan, segEnd);
    if (ctx === "param") return distinct ? 85 : 30;
    if (ctx === "start") {
      if (segEnd !== s.length) return 0;
      // `/bin/ab`, `bin/ansible`: a program named by its path is the whole value.
      if (BARE_AT_START.has(word.name)) return 72;
      // `time bsdtar`: a runner in front shows the distinct word is a program it runs.
      if (ran && distinct) return 76;
      if (isCompound(word.name)) return 60;
      return word.path && PROGRAM_PATH.test(s.slice(p, word.end)) ? 75 : 0;
    }
    if (!distinct && !BARE_COMMANDS.has(word.name)) return 30;
    if (!tail) return distinct ? 55 : 35;
    if (ctx === "line") return distinct ? 78 : 72;
    return distinct ? 88 : 80;
  }
  if (word.name === "echo" || word.name === "printf") {
    if (scan.redirectAfter(word.end)) return 90;
    // `; echo $((1+1))`: a computed answer is what a blind probe looks for.
    if (
      (ctx === "strong" || ctx === "subst") && ARITHMETIC.test(s.slice(word.end, word.end + 256))
    ) {
      return 85;
    }
    // `$(printf '...'|rev)`: output computed inside a substitution is a command line.
    if (ctx === "subst" && (closed || s.charCodeAt(segEnd) === 124)) return 85;
    return ctx === "strong" || ctx === "subst" ? 60 : 20;
  }
  const head = args.next() ?? "";
  // `ipconfig/all` glues a switch to a distinct name; `type/text`, `date/time`, `copy/paste`
  // (a MIME-like type, a pair of words) glue one to a common word, which no more than names it.
  const first = word.glued === true && !distinct ? 1 : argStrength(head, word.name);
  let all = first > 0;
  let flagged = first === 2;
  // Past the first plain word only a distinct name still looks for an option.
  for (let n = 0; n < MAX_JUDGED_ARGS && (all || (distinct && !flagged)); n++) {
    const arg = args.next();
    if (arg === undefined || arg.charCodeAt(0) === 35) break;
    const strength = argStrength(arg, word.name);
    if (strength === 0) all = false;
    else if (strength === 2) flagged = true;
  }
  const redirect = scan.redirectWithin(args.start, args.end);
  // `ansible-config dump`, `chef-run all x.rb`: a name no prose spells runs with any argument.
  const compound = isCompound(word.name);
  if (ctx === "strong" || ctx === "subst" || ctx === "param") {
    if (first === 2 || all || redirect || closed) return distinct ? 92 : 85;
    // `; ansible all -m ping`: an option further on shows a distinct name is a program.
    if (distinct && (flagged || compound || ctx === "param")) return 85;
    return distinct ? 60 : 30;
  }
  if (first === 2 && (distinct || all || redirect)) return distinct ? 85 : 78;
  // `net user ...`, `reg add ...`: a Windows administration verb is never prose.
  if (first === 2 && SUBCOMMANDS.get(word.name)?.has(head) === true) return 85;
  if (first === 2 && PATH_ARG.test(head)) return 75;
  if (all && distinct) return 80;
  if (all && META_COMMANDS.has(word.name) && commandKind(head) === "distinct") return 76;
  // `sleep 5`, `ping 10.0.0.1` as the whole value; quoted strings alone prove nothing.
  if (all && NUMERIC_COMMANDS.has(word.name) && DIGIT.test(head)) return 72;
  if (first === 2) return 55;
  return (compound || (distinct && flagged)) && ctx === "start" ? 60 : 0;
}

/**
 * A backtick substitution glued to other text (`--exec=\`id\`--x`) runs inside a word; one
 * set off by spaces is as likely a Markdown code span, judged like any separator.
 */
function gluedBacktick(s: string, at: number): boolean {
  const close = s.indexOf("`", at + 1);
  if (close < 0) return false;
  const before = s.charCodeAt(at - 1);
  const after = s.charCodeAt(close + 1);
  return (at > 0 && !isSpace(before) && before !== 10) ||
    (close + 1 < s.length && !isSpace(after) && after !== 10);
}

/**
 * The highest score a command inside a Markdown code span or fence earns: a description, a
 * note or a runbook quotes shell lines there (`` `df -h` ``, a ```` ```sh ```` block), and a
 * command line spelled that way in prose is as often documentation as an injection. `strict`
 * still blocks it; the exploit shapes (reverse shells, `/dev/tcp`) are read apart, whatever
 * the span.
 */
const SPAN_CAP = 60;
/** Plain words outside code, the fewest that make a value prose. */
const PROSE_WORDS = 3;
const PROSE_WORD = /[a-z]{2,}/gi;
/** Characters that may stand before a code span's opening backtick or after its closing one. */
const SPAN_EDGE = /[\s.,;:!?()"'\[\]*_-]/;

/**
 * The Markdown code spans (`` `df -h` ``, set off from the words around them) and fences
 * (```` ``` ```` lines) of a value that reads as prose, as `[open, close]` index pairs; none
 * when the value has no backtick or too few plain words outside its code.
 */
function codeSpans(s: string): number[] {
  if (s.indexOf("`") < 0) return [];
  const spans: number[] = [];
  let prose = "";
  let last = 0;
  for (let i = s.indexOf("`"); i >= 0 && i < s.length; i = s.indexOf("`", i)) {
    let run = 1;
    while (s.charCodeAt(i + run) === 96) run++;
    const fence = run >= 3 && (i === 0 || s.charCodeAt(i - 1) === 10);
    const ticks = "`".repeat(run);
    let close = s.indexOf(fence ? `\n${ticks}` : ticks, i + run);
    if (fence && close >= 0) close++;
    const edgeBefore = i === 0 || SPAN_EDGE.test(s.charAt(i - 1));
    const after = close + run;
    const edgeAfter = after >= s.length || SPAN_EDGE.test(s.charAt(after));
    const inline = !fence && close >= 0 && s.slice(i, close).indexOf("\n") < 0;
    if (close < 0 || !edgeBefore || !edgeAfter || !(fence || inline) || close === i + run) {
      i += run;
      continue;
    }
    prose += " " + s.slice(last, i);
    spans.push(i, after - 1);
    last = after;
    i = after;
  }
  prose += " " + s.slice(last);
  return spans.length > 0 && (prose.match(PROSE_WORD)?.length ?? 0) >= PROSE_WORDS ? spans : [];
}

/** Whether `at` falls inside one of `spans` (`[open, close]` pairs in order). */
function inSpan(spans: readonly number[], at: number): boolean {
  for (let k = 0; k + 1 < spans.length; k += 2) {
    if (at < (spans[k] ?? 0)) return false;
    if (at <= (spans[k + 1] ?? 0)) return true;
  }
  return false;
}

/** Whether the value's first word (after spaces and quotes) is a command name. */
function startsWithCommand(scan: Scan): boolean {
  const s = scan.s;
  let p = 0;
  while (p < s.length && (isSpace(s.charCodeAt(p)) || isQuote(s.charCodeAt(p)))) p++;
  const word = readWord(scan, p);
  return word !== undefined && commandKind(word.name) !== undefined;
}

/** Shell syntax that runs something whatever its words: aliases, tildes, history, dot commands. */
function shellSyntax(value: DetectorInput, text: string): Finding | undefined {
  let lead = 0;
  while (lead < text.length && isSpace(text.charCodeAt(lead))) lead++;
  const c0 = text.charCodeAt(lead);
  const tilde = c0 === 126 /* ~ */ ? TILDE.exec(text) : null;
  if (tilde !== null) {
    // `~+`, `~-1` name the directory stack; `~2` alone may also be an approximate number.
    return makeFinding(value, "rce", tilde[1] === undefined ? 72 : 50, "cmdi.tilde", text, 0);
  }
  if (c0 === 33 /* ! */ && HISTORY.test(text)) {
    return makeFinding(value, "rce", 72, "cmdi.history", text, 0);
  }
  if (text.indexOf("alias") >= 0) {
    const alias = ALIAS.exec(text);
    if (alias !== null) return makeFinding(value, "rce", 82, "cmdi.alias", text, alias.index);
  }
  if (text.indexOf(".shell") >= 0 || text.indexOf(".system") >= 0) {
    const dot = DOT_COMMAND.exec(text);
    if (dot !== null) return makeFinding(value, "rce", 85, "cmdi.dot_command", text, dot.index);
  }
  return undefined;
}

/** A word that is one of {@link BARE_AT_START}, whatever its case, without allocating. */
export function mayBeBareCommand(word: string): boolean {
  return BARE_WORD.test(word);
}

const BARE_WORD = new RegExp(`^(?:${[...BARE_AT_START].join("|")})$`, "i");

/**
 * Judges a value that is one plain word (the inspector skips such values otherwise): a
 * command that only reports on the system (`whoami`, `ipconfig`) is a probe.
 *
 * @param value the decoded input
 * @returns an `rce` finding or undefined
 */
export function bareCommand(value: DetectorInput): Finding | undefined {
  const word = value.decoded;
  if (word.length < 5 || word.length > 10 || !BARE_AT_START.has(word.toLowerCase())) {
    return undefined;
  }
  return makeFinding(value, "rce", 72, "cmdi.command", word, 0);
}

/** Where the scan below finds a command position: each character it gives a context. */
const SEPARATOR = /[;`|&\n\r]|[$<>]\(/g;

/**
 * Reports shell commands in command position, shell obfuscation and known exploit shapes.
 *
 * @param value the decoded input
 * @returns the strongest finding, class `rce`
 */
export function cmdi(value: DetectorInput): Finding | undefined {
  const text = value.decoded.length > MAX_CHARS ? value.decoded.slice(0, MAX_CHARS) : value.decoded;
  if (!GATE.test(text)) return undefined;
  let best: Finding | undefined;
  if (text.indexOf("(") >= 0 && FUNCTION_BODY.test(text)) {
    const shellshock = SHELLSHOCK.exec(text);
    if (shellshock !== null) {
      return makeFinding(value, "rce", 97, "cmdi.shellshock", text, shellshock.index);
    }
    if (SHELLSHOCK_START.test(text)) {
      return makeFinding(value, "rce", 92, "cmdi.shellshock", text, 0);
    }
    const bomb = FORK_BOMB.exec(text);
    if (bomb !== null) return makeFinding(value, "rce", 95, "cmdi.fork_bomb", text, bomb.index);
  }
  best = shellSyntax(value, text);
  if (SPECIAL_HINT.test(text)) {
    const special = REVERSE_SHELL.exec(text) ?? WINDOWS_SHELL.exec(text) ??
      COMMAND_OPTION.exec(text) ?? RUNS_OPTION.exec(text);
    if (special !== null) {
      best = makeFinding(value, "rce", 92, "cmdi.shell_exploit", text, special.index);
    }
  }
  const windows = judgeWindows(text.toLowerCase());
  if (windows !== undefined) {
    best = stronger(best, makeFinding(value, "rce", windows.score, windows.rule, text, windows.at));
  }
  if (text.indexOf("$") >= 0) {
    const expansion = text.indexOf("${") >= 0
      ? PARAM_EXPANSION.exec(text) ?? PARAM_DEFAULT.exec(text)
      : null;
    if (expansion !== null) {
      const score = expansion[0].endsWith("-") || expansion[0].endsWith("=") ||
          expansion[0].endsWith("?") || expansion[0].endsWith("+")
        ? 55
        : 75;
      best = stronger(
        best,
        makeFinding(value, "rce", score, "cmdi.parameter_expansion", text, expansion.index),
      );
    }
    const ifs = IFS_TRICK.exec(text);
    if (ifs !== null) {
      best = stronger(best, makeFinding(value, "rce", 88, "cmdi.ifs_obfuscation", text, ifs.index));
    }
    const arithmetic = text.indexOf("$((") >= 0 ? ARITHMETIC.exec(text) : null;
    if (arithmetic !== null) {
      best = stronger(
        best,
        makeFinding(value, "rce", ARITHMETIC_SCORE, "cmdi.arithmetic", text, arithmetic.index),
      );
    }
  }
  const startCtx: Context = COMMAND_PARAM.test(value.input.name) ? "param" : "start";
  if (!hasSeparator(text)) {
    // No command position but the start: only the first words matter.
    const head = deobfuscate(text.length > 256 ? text.slice(0, 256) : text);
    const score = judgeCommand(new Scan(head), 0, startCtx);
    return score > 0
      ? stronger(best, makeFinding(value, "rce", score, "cmdi.command", head, 0))
      : best;
  }
  const s = deobfuscate(text);
  const scan = new Scan(s);
  const spans = codeSpans(s);
  let top = judgeCommand(scan, 0, startCtx);
  // `{,ifconfig}`, `{l,-lh}s`: a brace expansion that builds a command word is no text's.
  if (top < 80 && BRACE_START.test(text) && startsWithCommand(scan)) top = 80;
  let topAt = 0;
  // The regex engine finds the next separator faster than a loop reads every character.
  for (let i = 0; i < s.length; i++) {
    SEPARATOR.lastIndex = i;
    const next = SEPARATOR.exec(s);
    if (next === null) break;
    i = next.index;
    const c = s.charCodeAt(i);
    let ctx: Context | undefined;
    let from = i + 1;
    if (c === 59 /* ; */) ctx = "strong";
    else if (c === 96 /* ` */) ctx = gluedBacktick(s, i) ? "subst" : "strong";
    else if (c === 124 /* | */) {
      ctx = "strong";
      if (s.charCodeAt(i + 1) === 124) from = i + 2;
    } else if (c === 38 /* & */) {
      if (s.charCodeAt(i + 1) === 38) {
        ctx = "strong";
        from = i + 2;
      } else ctx = isSpace(s.charCodeAt(i + 1)) ? "strong" : "amp";
    } else if (c === 10 || c === 13) ctx = "line";
    else if (
      (c === 36 || c === 60 || (c === 62 && !closesTag(s, i))) && s.charCodeAt(i + 1) === 40 /* ( */
    ) {
      // `$(id)`, and process substitution: `<(cmd)`, `>(tee log)`.
      ctx = "subst";
      from = i + 2;
    }
    if (ctx === undefined) continue;
    let score = judgeCommand(scan, from, ctx);
    if (spans.length > 0 && score > SPAN_CAP && inSpan(spans, i)) score = SPAN_CAP;
    if (score > top) {
      top = score;
      topAt = i;
    }
    if (from > i + 1) i = from - 1;
  }
  if (top > 0) best = stronger(best, makeFinding(value, "rce", top, "cmdi.command", s, topAt));
  return best;
}

/** A markup tag that ends where `at` is: `<p>`, `<td class="x">`, `</b>`. */
const TAG_BEFORE = /<\/?[a-z][a-z0-9]*(?:\s[^<>]{0,200})?$/i;

/**
 * Whether the `>` at `at` closes a markup tag (`<p>(optional)</p>`): HTML, not the `>(` of a
 * process substitution. In a shell, `<p>(id)` reads its input from a file named `p` first, and
 * fails when there is none, so the command never runs.
 */
function closesTag(s: string, at: number): boolean {
  const open = s.lastIndexOf("<", at);
  return open >= 0 && at - open <= 220 && TAG_BEFORE.test(s.slice(open, at));
}
