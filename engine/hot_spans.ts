/**
 * Hot spans of long values: where in a window of a long value (longer than `MAX_TEXT`) some
 * detector can find something, so only those parts are judged.
 *
 * A detector fires on a shape it needs: SQL needs a quote followed by SQL syntax, a keyword pair
 * (`union ... select`), a call (`sleep(`) or a comparison after `or`/`and`; a shell command needs
 * a separator (`;`, `|`, `&`, a backtick, a newline) or a substitution (`$(`); markup needs `<`;
 * a template needs `{{`, `${`, `{%`; a path needs `../` or a system directory; a URL attack needs
 * a scheme other than the web's, an address, or a URL that is not a plain link. The triggers
 * below ({@link SHARED} and the kinds' own checks by the character a trigger starts with,
 * {@link WORDS} for those without punctuation, base64 runs) are those shapes, read from the
 * detectors' own gates, lists and rules; each part names where it comes from, and this file is
 * the one place the vocabulary is kept. A window is read once for them, and the detectors are
 * run on the text around each trigger ({@link MARGIN} each side, merged when close) exactly as
 * they run on a window; what lies far from every trigger is not judged. Short values (every
 * value up to a window long, that is every request of ordinary traffic) never come here.
 *
 * The text kinds differ in what is structure (see {@link TextKind}): a JSON document's quotes,
 * colons and braces, a form's `=` and `&`, are everywhere and trigger nothing there; their
 * content is still read for every other trigger. Encodings are triggers themselves (a percent
 * escape, an entity, a backslash escape, UTF-7), except in a form, where escapes are how
 * every value is written: a form's windows are decoded piece by piece and the pieces read for
 * the triggers, so what an escape hides is found where it decodes.
 */

import { decodeBase64Code, normalize, type PlusMode } from "./normalize.ts";
import { gated, gateOn } from "./literal_gate.ts";
import { SENSITIVE_FILES } from "./lfi_files.ts";
import { classifyHost, isKubernetesApi } from "./host_address.ts";
import { METADATA_PATH } from "./ssrf.ts";
import { CLASS_NAMES, GADGET_WORDS } from "./java_vocabulary.ts";

/**
 * What a long value is made of, which decides what is structure:
 *
 * - `text`: prose, code, any raw text (a text/plain body, a long JSON string value): every
 *   trigger applies, quotes included;
 * - `json`: a JSON document judged as raw text (a body past the input cap): `"`, `:`, `,`,
 *   `{"` are its structure; a quote inside a string is written `\"`, and a backslash is a
 *   trigger, so a breakout is still found;
 * - `form`: an urlencoded form judged as raw text: `name=value&` is its structure and percent
 *   escapes are how values are written, so windows are decoded before they are read; `=` and
 *   `&name=` trigger nothing, `+` reads as a space;
 * - `encoded`: one long form or query value (percent escapes, `+` for spaces): decoded before
 *   it is read, and `=` and `&` are content.
 */
export type TextKind = "text" | "json" | "form" | "encoded";

/** Characters judged each side of a trigger. */
export const MARGIN = 1024;
/** Hot spans closer than this are judged as one. */
const JOIN = 2 * MARGIN;
/** Past a trigger, the scan goes on this far on, so a trigger skipped has half a margin after it. */
const SKIP = MARGIN / 2;

/** A trigger whatever follows: the character alone. */
const ANY = /[^]/y;

/**
 * What the characters around a candidate must be for a check to have any chance: false only
 * where the check's pattern cannot match at `at` (a necessary condition, read with charCodeAt,
 * so most candidates are decided without running the pattern; where it answers true the
 * pattern decides).
 */
type May = (text: string, at: number) => boolean;

/** A trigger's characters, its check (null: the character alone) and the check's {@link May}. */
type Part = readonly [string, string | null, May?];

/**
 * The check of each character a trigger starts with, as sticky patterns (`(?<=...)` reads what
 * precedes), and the pattern that finds those characters: `slot` gives each character's index
 * into `checks` and `mays` (0 for none, 1 for {@link ANY}).
 */
interface Checks {
  readonly slot: Uint8Array;
  readonly checks: readonly (RegExp | null)[];
  readonly mays: readonly (May | null)[];
  readonly candidate: RegExp;
}

function sticky(source: string): RegExp {
  return new RegExp(source, "iy");
}

/** ASCII letters (the checks' `i` flag folds no other character into `[a-z]`). */
function isLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** `\w` (ASCII: no `u` flag). */
function isWord(c: number): boolean {
  return isLetter(c) || isDigit(c) || c === 95;
}

/** ASCII characters of `\s`; `\s` also holds some above ASCII, which callers answer "maybe". */
function isAsciiSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

/** Where `\s*` from `at` can end at the earliest, or -1 when a character above ASCII may be one. */
function pastAsciiSpace(text: string, at: number): number {
  let j = at;
  for (let c = text.charCodeAt(j); isAsciiSpace(c); c = text.charCodeAt(++j));
  return text.charCodeAt(j) >= 128 ? -1 : j;
}

/**
 * `.`: a dot segment needs a second `.`; a name a letter, `_` or `$` after it; an IPv4
 * address a digit before it and one to three digits then `.` after it.
 */
const MAY_DOT: May = (text, at) => {
  const n = text.charCodeAt(at + 1);
  if (n === 46 || isLetter(n) || n === 95 || n === 36) return true;
  if (!isDigit(n) || !isDigit(text.charCodeAt(at - 1))) return false;
  let r = 1;
  while (r <= 3 && isDigit(text.charCodeAt(at + 1 + r))) r++;
  return r <= 3 && text.charCodeAt(at + 1 + r) === 46;
};
/** `-`: `-i`, `-c,`, `-exec`, `--x`, `-o`: one of `i`, `c`, `e`, `-`, `o` after it. */
const MAY_DASH: May = (text, at) => {
  const n = text.charCodeAt(at + 1);
  const l = n | 32;
  return n === 45 || l === 105 || l === 99 || l === 101 || l === 111;
};
/** `/`: `/..`, `/*`, `//` or a letter after it. */
const MAY_SLASH: May = (text, at) => {
  const n = text.charCodeAt(at + 1);
  return n === 46 || n === 42 || n === 47 || isLetter(n);
};
/** `@` outside an e-mail address: not both a `[\w.+-]` before it and a `[\w-]` after it. */
const MAY_AT: May = (text, at) => {
  const p = text.charCodeAt(at - 1);
  const n = text.charCodeAt(at + 1);
  return !((isWord(p) || p === 46 || p === 43 || p === 45) && (isWord(n) || n === 45));
};
/** `[`: an IPv6 literal starts with a hex digit or `:`. */
const MAY_BRACKET: May = (text, at) => {
  const n = text.charCodeAt(at + 1);
  return isDigit(n) || ((n | 32) >= 97 && (n | 32) <= 102) || n === 58;
};
/** `{` in a JSON document: not `{"` or `{}`. */
const MAY_JSON_BRACE: May = (text, at) => {
  const n = text.charCodeAt(at + 1);
  return n !== 34 && n !== 125;
};
/** `)`: `)(`, or after spaces `;`, `-`, `#`, `/`, `u` (union) or `)`. */
const MAY_CLOSE: May = (text, at) => {
  if (text.charCodeAt(at + 1) === 40) return true;
  const j = pastAsciiSpace(text, at + 1);
  if (j < 0) return true;
  const c = text.charCodeAt(j);
  return c === 59 || c === 45 || c === 35 || c === 47 || (c | 32) === 117 || c === 41;
};
/** `!!\w`. */
const MAY_BANG: May = (text, at) => text.charCodeAt(at + 1) === 33;
/**
 * A newline, after tabs and spaces: a lower-case letter, one of `./~-@!`, or the first letter
 * of a header name (`bcc`, `cc`, `to`, `from`, `subject`, `reply-to`, `content-`, `mime-`,
 * `set-cookie`, `location`, `x-`, `http/`) in either case.
 */
const MAY_NEWLINE: May = (text, at) => {
  let j = at + 1;
  let c = text.charCodeAt(j);
  while (c === 9 || c === 32) c = text.charCodeAt(++j);
  if (c >= 97 && c <= 122) return true;
  if (c === 46 || c === 47 || c === 126 || c === 45 || c === 64 || c === 33) return true;
  if (c < 65 || c > 90) return false;
  const l = c | 32;
  return l === 98 || l === 99 || l === 116 || l === 102 || l === 115 || l === 114 ||
    l === 109 || l === 108 || l === 120 || l === 104;
};
/** A quote after `or`, `and`, `xor`: a space or `+` right before it. */
const MAY_TAUTOLOGY_QUOTE: May = (text, at) => {
  const p = text.charCodeAt(at - 1);
  return p === 43 || isAsciiSpace(p) || p >= 128;
};
/** The first letters of {@link SQL_AFTER_QUOTE}'s keywords, a bit each (`a` is bit 0). */
const SQL_QUOTE_LETTERS = [..."abcdefghilnopsuwx"].reduce(
  (m, ch) => m | (1 << (ch.charCodeAt(0) - 97)),
  0,
);
/**
 * {@link SQL_AFTER_QUOTE} after the quote at `at`: a space (or a character above ASCII, which
 * may be one), one of `()+\\|` or a digit, the first letter of one of its keywords, or the
 * first character of one of its operators and comments.
 */
const MAY_SQL_AFTER_QUOTE: May = (text, at) => {
  const c = text.charCodeAt(at + 1);
  if (c >= 128 || isAsciiSpace(c) || isDigit(c)) return true;
  if (isLetter(c)) {
    return ((1 << ((c | 32) - 97)) & SQL_QUOTE_LETTERS) !== 0;
  }
  return c === 40 || c === 41 || c === 43 || c === 92 || c === 124 || c === 38 || c === 59 ||
    c === 45 || c === 35 || c === 47 || c === 61 || c === 60 || c === 62 || c === 33;
};
/** `+A...` (UTF-7). */
const MAY_UTF7: May = (text, at) => (text.charCodeAt(at + 1) | 32) === 97;

/**
 * The checks every kind shares. Each names the detector (and gate or rule) it comes from; a
 * shape is listed once even when several detectors need it. `(?-i:...)` marks what only counts
 * in lower case.
 */
const SHARED: readonly Part[] = [
  // cmdi GATE and shell_scan (separators, pipes, substitution, redirection); xss, html, ssi,
  // xxe, php and asp tags, ssti `<%`: markup starts with `<`; `>` ends a tag and redirects;
  // cmd.exe escapes with `^`.
  ["<>|`;^", null],
  // cmdi (`$(`, `${IFS}`), jndi (`${jndi:`), ssti (`${7*7}`), php (`$_GET`), nosqli (`$ne`,
  // `$where`), code injection GATE.
  ["$", null],
  // crlf, mail (header injection): a carriage return; control characters (isBinary aside).
  [
    "\r\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17" +
    "\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f",
    null,
  ],
  // Look-alike characters some decoders fold (fullwidth forms, small `<`, division slashes).
  // traversal's ODD_SLASH and ODD_DOT (spellings of `/`, `\\` and `.` decoders accept).
  [
    "\u2215\u2044\u02bc\u2032\u3031\u3032\u3033\u3034\u3035\u309d\u309e\u30fc" +
    "\u2216\uefc8\uf025\u2024\u29f5\u29f8",
    null,
  ],
  // ssti GATE (`{{`, `{%`, `{#`, `#{`, `*{`, `@{`), cmdi BRACE_WORDS (`{cat,/etc/passwd}`);
  // a JSON object's `{"` and `{}` are structure.
  ["{", String.raw`\{(?!\s*["}])`, MAY_JSON_BRACE],
  // cmdi GATE (`\n` separates commands): a newline before a lower-case word, a path or a
  // dash; mail and crlf: a newline before a header name. A paragraph's capital is none.
  [
    "\n",
    String
      .raw`\n[\t ]*(?:(?-i:[a-z.\/~\-@!])|(?:bcc|cc|to|from|subject|reply-to|content-[\w-]+|mime-version|set-cookie|location|x-[\w-]+|http\/)\s*:)`,
    MAY_NEWLINE,
  ],
  // cmd.exe (`%COMSPEC%`), ssti (`{%`, `%>`), escapes (left after decoding, or not decoded);
  // a percentage (`50% of`) is none.
  ["%", String.raw`(?<!\d)%|%(?=[\w%{])`],
  // ssti and cmdi `#`, sqli's `#` comment.
  ["#", null],
  // traversal PREFILTER (dot segments), restricted_files (backups, dot files), java and
  // code injection (`java.lang.`, `document.cookie`, `Server.`), ssrf (addresses, OAST hosts).
  [
    ".",
    String
      .raw`\.\.(?![\s.!?,"')\]]|$)|\.(?=[a-z_$])(?:(?<=\b(?:java|javax|sun|jdk|groovy|bsh|document|window|self|top|parent|frames|globalthis|this|constructor|process|db|server|response|request|wscript|location)\s*\.)|(?:bak|old|orig|swp|sql|ini|conf|config|log|inc|save|htaccess|htpasswd|git|svn|env|ssh|aws|docker|npmrc|ds_store|bash_history|internal|local)|(?<=\b(?:xip|nip|oast|ceye|dnslog|localtest|interact)\.)|download)|\.(?=\d)(?<=\b\d{1,3}\.)\d{1,3}\.\d{1,3}\.\d{1,3}\b`,
    MAY_DOT,
  ],
  // traversal (`/..`, `/etc/`), sqli comments (`/*`), open_redirect (`//host`).
  [
    "/",
    String
      .raw`\/\.\.|\/\*|\/(?:etc|proc|dev|bin|sbin|usr|var|tmp|root|boot|sys|home|opt|windows|winnt|inetpub|system32)|(?<!:)\/\/|(?<=\b(?:for|if)\s+)\/[a-z]\b`,
    MAY_SLASH,
  ],
  // ssrf, rfi, open_redirect: schemes other than the web's, URLs that are not plain links;
  // xss script URLs; ldap_xpath (`child::`), php (`::`); php serialised objects.
  [
    ":",
    String
      .raw`::|(?<=[a-z0-9]\s{0,3}):(?:(?<=\b(?:javascript|vbscript|livescript|mocha|data|file|php|phar|zip|glob|expect|jar|gopher|dict|ldaps?|rmi|dns|iiop|corba|nis|nds|netdoc|jdbc|tftp|sftp|ftps?|smb|ssh2|ogg|rar|unix|telnet|jrmp|mailto|wss?|view-source|compress\.\w+)\s*:)|(?<=\bhttps?:)(?!\/\/[a-z0-9])|(?<=\b[aOCs]:)\d+:[{"]|(?<=\b[a-z]:)[\/\\]|(?<=\benv):)`,
  ],
  // sqli (function calls), xss (`alert(1)`), code injection (`system(`, `eval(`), ldap_xpath
  // (`count(`), java (`T(`), css (`expression(`, `url(`): a word directly before `(`, or
  // before `(` and an argument that opens with a digit, apostrophe or variable; cmdi (`() {`),
  // sqli subqueries, LDAP filters (`(&(`, `(|(`, `(cn=`).
  [
    "(",
    String
      .raw`(?<=[\w$\]\x60])\(|(?<=\w\s+)\(\s*[\d'@$\x60]|\(\s*\)|\(\s*(?:select\s*[\w*@(]|[&|!]|[\w-]+\s*[~<>:]?=)`,
  ],
  // LDAP (`)(`, `*)`), sqli (`);`, `) union`).
  [")", String.raw`\)\(|\)\s*(?:;|--|#|\/\*|union\b|\))`, MAY_CLOSE],
  ["*", String.raw`\*\s*\)|(?<=\/)\*|\*\/`],
  // restricted_files HINT: `file~`, `~/`.
  ["~", String.raw`(?<=\w)~(?=[\s"'\/]|$)|~\/`],
  // `@` outside an e-mail address: SQL variables (`@@version`, `declare @`), Razor and
  // SpEL, CSS `@import`, LDAP.
  ["@", String.raw`(?<![\w.+-])@|@(?![\w-])`, MAY_AT],
  // cmdi's SPECIAL_HINT, its options: `sh -i`, `sh,-c,`, `-exec`, `--output`, `-o /path`.
  ["-", String.raw`(?<=\bsh\s+)-i|(?<=\bsh,)-c,|-exec|--[a-z]|-o\s*[pl]`, MAY_DASH],
  // sqli tautologies (`or 'a'='a`, `and @x`): a quote or `@` after `or`, `and`, `xor`.
  ["'", String.raw`(?<=\b(?:or|and|xor)[\s+]+(?:not[\s+]+)?)'`, MAY_TAUTOLOGY_QUOTE],
  // deserialization: YAML tags (`!!python/object`).
  ["!", String.raw`!!\w`, MAY_BANG],
  // ssrf: IPv6 literals.
  ["[", String.raw`\[[0-9a-f]*:[0-9a-f:.]*\]`, MAY_BRACKET],
];

/**
 * What a closing quote is followed by when it breaks out into SQL (sql_rules, sql_grammar: the
 * breakout readings after a `'` or `"`; ldap_xpath's `' or '1'='1`): an operator or comment at
 * once or after spaces, a keyword that continues as SQL, or a digit, parenthesis, `+` or
 * backslash right after it. A quoted word of prose followed by `and`, `in` or `like` is none.
 */
const SQL_AFTER_QUOTE = String.raw`(?:\s*(?:(?:or|and|xor)\b\s*(?:not\s+)?(?:['"\d(@-]|` +
  String.raw`true\b|false\b|null\b|[\w.]+\s*(?:[=<>]|!=|\s(?:like|rlike|regexp|between)\s)|` +
  String
    .raw`[\w.]+\s+(?:is\s+(?:not\s+)?null|in\s*\())|\|\||&&|union\b|select\s*(?:[*@(\d]|(?:all|distinct|top|null|concat|char|version|user|database|sleep|count|group_concat|load_file)\b)|` +
  String.raw`order\s+by\b|group\s+by\b|having\b|where\s+[\w.]+\s*[=<>!]|limit\s+\d|` +
  String.raw`like\s+['"\d%]|into\s+(?:out|dump)file|from\s+[\w.\x60]+\s*(?:where|;|--|#|$)|` +
  String.raw`procedure\b|sleep\s*\(|benchmark\s*\(|waitfor\b|exec\b|collate\b|div\b|` +
  String.raw`is\s+(?:not\s+)?null|in\s*\(|not\s+(?:in|like|between|null|exists)\b|` +
  String.raw`between\s+['"\d]|;|--|#|\/\*|=|<|>|!=)|[()+\\|\d])`;

const QUOTE: Part = ["'\u00b4\u2018\u2019", `.${SQL_AFTER_QUOTE}`, MAY_SQL_AFTER_QUOTE];
const DOUBLE_QUOTE: Part = ['"\u201c\u201d', `.${SQL_AFTER_QUOTE}`, MAY_SQL_AFTER_QUOTE];
/** `{` outside a JSON document: a JSON text in a value (NoSQL, SSTI), brace expansion. */
const BRACE: Part = ["{", null];
/** `=` in running text: tautologies (`1=1`), attributes, assignments. */
const EQUALS: Part = ["=", null];
/**
 * `=` in a form, where it is structure: the comparisons of a tautology (`or 1=1`), an event
 * handler (`onload=`), an attribute that loads or runs (`src=`, `style=`).
 */
const FORM_EQUALS: Part = [
  "=",
  String
    .raw`(?<=\b(?:or|and|xor|where|having)\s+(?:not\s+)?[\w'"().-]{1,32}\s*)=|(?<=\bon[a-z]{3,}\s*)=|(?<=\b(?:style|src|href|srcdoc|formaction|action|background|lowsrc|dynsrc|poster|xlink:href)\s*)=`,
];
/** `&` as a shell operator: `&&`, or `&` before a space; a form's `&name=` is structure. */
const FORM_AMPERSAND: Part = [
  "&",
  String.raw`&&|&(?=[\s;|])|&(?![\w.%\[\]-]*=|$)`,
];
const AMPERSAND: Part = ["&", null];
/** A backslash: traversal (`..\`), LDAP escapes (`\2a`), JavaScript and CSS escapes. */
const BACKSLASH: Part = ["\\", null];
/**
 * A JSON document's escapes: a quote inside a string (`\"`) when SQL syntax follows it, a
 * newline (`\n`) as {@link SHARED}'s newline, and every other escape.
 */
const JSON_ESCAPE: Part = [
  "\\",
  String
    .raw`\\"${SQL_AFTER_QUOTE}|\\[nr](?:\\[nrt])*[\t ]*(?:(?-i:[a-z.\/~\-@!])|\\"|(?:bcc|cc|to|from|subject|content-[\w-]+|set-cookie|location)\s*:)|\\[^"nrt]`,
];
/** UTF-7 (`+ADw-`), which normalize() decodes where `+A` occurs. */
const UTF7: Part = ["+", String.raw`\+A[\w+\/]{2,}-?`, MAY_UTF7];
/** Fullwidth forms (`＜`), halfwidth and small forms. */
const WIDE: Part = [
  String.fromCharCode(...Array.from({ length: 0xfff0 - 0xff00 }, (_, k) => 0xff00 + k)) +
  String.fromCharCode(...Array.from({ length: 0xfe70 - 0xfe50 }, (_, k) => 0xfe50 + k)),
  null,
];

/**
 * Words that are triggers without any punctuation, each with what must follow it (sql_rules,
 * sql_grammar: keyword pairs and statements, one keyword of prose being none; ssrf: local and
 * OAST hosts; java, deserialization: gadget names; cmdi and windows_cmd: commands that run
 * without a separator; xss: the sinks; traversal: the files it names; prototype_pollution).
 * A few words a pattern, each behind its literal gate (literal_gate.ts): the window's table
 * of triples, filled once, says which can occur, and the others are not scanned for.
 */
const WORDS: readonly RegExp[] = [
  String.raw`\bunion\b[\s\S]{0,64}?\bselect\b`,
  // A word is what lies between blanks or `+`: with `\S+` a word could also swallow the `+`
  // after it, so `select+w0+w1+...` had 2^n ways to split and took seconds to fail.
  String.raw`\bselect[\s+]+(?:[^\s+]+[\s+]+){0,6}?from\b`,
  String
    .raw`\b(?:insert[\s+]+into|delete[\s+]+from)\b|\bdrop[\s+]+(?:table|database|schema|view|procedure|function|user|index)\b|\bupdate[\s+]+[^\s+]+[\s+]+set\b`,
  String
    .raw`\bexec(?:ute)?[\s+]+(?:xp_|sp_|master\.|immediate\b)|\bwaitfor[\s+]+(?:delay|time)\b|\bprocedure[\s+]+analyse\b|\binto[\s+]+(?:out|dump)file\b`,
  String.raw`\border[\s+]+by[\s+]+\d`,
  String.raw`\bgroup[\s+]+by\b`,
  String.raw`\bhaving[\s+]+[\w(]+[\s+]*[=<>!(]`,
  String.raw`\b(?:information_schema|sysobjects|pg_sleep|xp_cmdshell)\b|\b0x[0-9a-f]{4,}\b`,
  String.raw`(?<=\b(?:or|and|xor)[\s+]+(?:not[\s+]+)?)(?:true|false|null)\b`,
  String
    .raw`localhost|metadata|burpcollaborator|oastify|interactsh|requestbin|pipedream|ngrok`,
  String
    .raw`processbuilder|classloader|ognl|memberaccess|xwork|beanutils|invokertransformer|templatesimpl|jndi|ysoserial|createobject`,
  // java (java_vocabulary.ts): the packages of its class list (`org.omg.`, `com.opensymphony.`)
  // and its gadget words, as the detector's own lists.
  [...new Set(CLASS_NAMES.map((name) => name.split(".").slice(0, 2).join(".").toLowerCase()))]
    .map((prefix) => String.raw`\b${prefix.replaceAll(".", String.raw`\.`)}\.`)
    .concat(GADGET_WORDS)
    .join("|"),
  "runtime",
  String.raw`\bon\s+error\s+resume\b`,
  String.raw`ro0ab|aced0005`,
  String
    .raw`\b(?:iex|invoke-\w+|powershell|pwsh|certutil|bitsadmin|mshta|rundll32|regsvr32|wmic|cmd(?:\.exe)?\s*\/[ck])\b`,
  String.raw`\b(?:alert|prompt|confirm|eval)\b`,
  String.raw`passwd|shadow|id_rsa|authorized_keys|win\.ini|boot\.ini|web\.config|system32`,
  // traversal PREFILTER and ODD_SLASH: hex and base64 spellings of `/`, `\\`, `.`, `../`.
  String.raw`0x(?:2f|5c|2e)|li4v|li5c`,
  // traversal (lfi_files.ts): the files and directories a file read aims at, as the
  // detector's own list (folded separators read as `/` or `\`, anchors as word edges).
  SENSITIVE_FILES.join("|")
    .replaceAll("(?:^|/)", "(?<![a-z0-9])")
    .replaceAll("(?:$|[^a-z])", "(?![a-z])")
    .replaceAll("sam$|", "")
    .replaceAll("/", "[\\/\\\\]"),
  "proto",
  // code injection and nosqli: dunder names (`__js_function`, `__class__`, `__import__`).
  "__[a-z]",
  // cmdi's SPECIAL_HINT, its words (its options are `-` checks above; `/dev/`, `>&` are
  // triggers of their own).
  String.raw`\bnc(?:at)?\s`,
  "mkfifo|comspec|socat",
  // windows_cmd's HINTS, less what English says (`if not`, `if "`, `for all`): `if exist`,
  // `if errorlevel`, the PowerShell aliases (`@echo`, `for /f`, `env:`, `.download` are
  // `@`, `/`, `:` and `.` checks).
  String
    .raw`(?<=\bif\s+)(?:exist|errorlevel|defined)\b`,
  String.raw`\b(?:iwr|irm|saps|sal)\s`,
].map((source) => gated(new RegExp(source, "gi")));

/**
 * The checks of each kind, by candidate character, compiled once. A character's check is its
 * parts' patterns joined; it has a {@link May} when each of them has one (the join can only
 * match where one of them can).
 */
function checksOf(parts: readonly Part[], json = false): Checks {
  const sources = new Map<number, string[]>();
  const mays = new Map<number, (May | undefined)[]>();
  for (const [chars, source, may] of parts) {
    for (const ch of chars) {
      const code = ch.charCodeAt(0);
      if (source === null) {
        sources.set(code, ["[^]"]);
        continue;
      }
      const list = sources.get(code) ?? [];
      if (list[0] !== "[^]") {
        list.push(source);
        mays.set(code, [...mays.get(code) ?? [], may]);
      }
      sources.set(code, list);
    }
  }
  const slot = new Uint8Array(65536);
  const checks: (RegExp | null)[] = [null, ANY];
  const checkMays: (May | null)[] = [null, null];
  /** Slots by joined source, so characters with the same check share one. */
  const slots = new Map<string, number>();
  let chars = "";
  for (const [code, list] of sources) {
    chars += `\\u${code.toString(16).padStart(4, "0")}`;
    if (list[0] === "[^]") {
      slot[code] = 1;
      continue;
    }
    const source = list.join("|");
    let k = slots.get(source);
    if (k === undefined) {
      k = checks.length;
      if (k > 255) throw new Error("hot_spans: too many checks");
      slots.set(source, k);
      checks.push(sticky(source));
      const own = mays.get(code)!;
      checkMays.push(
        own.some((m) => m === undefined)
          ? null
          : own.length === 1
          ? own[0]!
          : (text, at) => own.some((m) => m!(text, at)),
      );
    }
    slot[code] = k;
  }
  // A JSON document's `":` is skipped by the candidate pattern, before any check.
  const colon = json ? '|:(?<!":)' : "";
  if (json) chars = chars.replace("\\u003a", "");
  return { slot, checks, mays: checkMays, candidate: new RegExp(`[${chars}]${colon}`, "g") };
}

/** What every kind but a JSON document reads: its braces, both quotes, a backslash. */
const NOT_JSON = [...SHARED, WIDE, BRACE, QUOTE, DOUBLE_QUOTE, BACKSLASH];

const CHECKS: Readonly<Record<TextKind, Checks>> = {
  text: checksOf([...NOT_JSON, EQUALS, AMPERSAND, UTF7]),
  json: checksOf([...SHARED, WIDE, QUOTE, EQUALS, AMPERSAND, JSON_ESCAPE, UTF7], true),
  form: checksOf([...NOT_JSON, FORM_EQUALS, FORM_AMPERSAND]),
  encoded: checksOf([...NOT_JSON, EQUALS, AMPERSAND]),
};

/** Digits of base64, as normalize's decodeBase64Runs reads runs inside a value (hidden.ts). */
const BASE64_CHAR = new Uint8Array(65536);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
  BASE64_CHAR[c.charCodeAt(0)] = 1;
}
/** decodeBase64Runs' shortest run (MIN_BASE64_RUN). */
const BASE64_RUN = 12;

/** What ends a URL's authority, and its path (ssrf's HOST_END and URL reading). */
const AUTHORITY_END = /[/?#\\\s"'<>]/g;
const PATH_END = /[?#\s"'<>]/g;
const SCHEME = /([a-z][a-z0-9+._-]{0,15})$/i;
/**
 * Whether the `://` at `at` starts a URL the SSRF and RFI detectors can read as an attack
 * (ssrf.ts): a scheme other than the web's, a user in the authority, a host that is not a
 * public name (classifyHost: loopback, private, metadata, numeric), the Kubernetes API, or a
 * metadata service's path (METADATA_PATH). A link to a public site is none.
 */
function riskyUrl(text: string, at: number): boolean {
  const scheme = SCHEME.exec(text.slice(Math.max(0, at - 16), at))?.[1]?.toLowerCase();
  if (scheme !== "http" && scheme !== "https") return true;
  const from = at + 3;
  AUTHORITY_END.lastIndex = from;
  const end = AUTHORITY_END.exec(text)?.index ?? text.length;
  const authority = text.slice(from, end).toLowerCase();
  if (authority.indexOf("@") >= 0 || authority.length === 0) return true;
  const host = authority.charCodeAt(0) === 91 /* [ */
    ? authority.slice(0, authority.indexOf("]") + 1)
    : authority.split(":")[0]!;
  const kind = classifyHost(host).kind;
  if ((kind !== "name" && kind !== "public") || isKubernetesApi(host)) return true;
  PATH_END.lastIndex = end;
  const pathEnd = PATH_END.exec(text)?.index ?? text.length;
  return METADATA_PATH.test(text.slice(end, pathEnd));
}

/** Where triggers start and end, two numbers each, reused by every scan (one runs at a time). */
const HITS: number[] = [];

/**
 * The triggers of `text` that start in `[from, to)`, as start and end offsets appended to
 * {@link HITS}, each source in order (candidates, each word pattern, base64 runs).
 */
function scan(text: string, checks: Checks, from: number, to: number): void {
  const candidate = checks.candidate;
  const slot = checks.slot;
  const byCheck = checks.checks;
  const mays = checks.mays;
  candidate.lastIndex = from;
  // After a trigger, the next one is looked for half a margin on: what lies between is judged
  // with it, with at least half a margin after it. Every candidate is one character long, so
  // it ends where the pattern's `lastIndex` is, without a match array.
  while (candidate.test(text)) {
    const at = candidate.lastIndex - 1;
    if (at >= to) break;
    const code = text.charCodeAt(at);
    if (code === 58 && text.charCodeAt(at + 1) === 47 && text.charCodeAt(at + 2) === 47) {
      if (riskyUrl(text, at)) {
        HITS.push(at, at + 3);
        candidate.lastIndex = at + 3 + SKIP;
      }
      continue;
    }
    const k = slot[code]!;
    if (k === 0) continue;
    if (k === 1) {
      // ANY: the character alone.
      HITS.push(at, at + 1);
      candidate.lastIndex = at + 1 + SKIP;
      continue;
    }
    const may = mays[k]!;
    if (may !== null && !may(text, at)) continue;
    const check = byCheck[k]!;
    check.lastIndex = at;
    if (check.test(text)) {
      HITS.push(at, check.lastIndex);
      candidate.lastIndex = check.lastIndex + SKIP;
    }
  }
  gateOn(text);
  for (const word of WORDS) {
    word.lastIndex = from;
    for (let m = word.exec(text); m !== null; m = word.exec(text)) {
      if (m.index >= to) break;
      HITS.push(m.index, word.lastIndex);
      word.lastIndex += SKIP;
    }
  }
  // A run of 12 base64 digits holds one of every 12th place: look there, then measure it,
  // as decodeBase64Runs does; a run is a trigger when it decodes to code-like text.
  const n = text.length;
  for (let i = from + BASE64_RUN - 1; i < to + BASE64_RUN && i < n; i += BASE64_RUN) {
    if (BASE64_CHAR[text.charCodeAt(i)] !== 1) continue;
    let s = i;
    while (s > from && BASE64_CHAR[text.charCodeAt(s - 1)] === 1) s--;
    let e = i + 1;
    while (e < n && BASE64_CHAR[text.charCodeAt(e)] === 1) e++;
    if (e - s >= BASE64_RUN && s < to) {
      let end = e;
      while (end < n && end - e < 2 && text.charCodeAt(end) === 61 /* = */) end++;
      if (decodeBase64Code(text.slice(s, end), true) !== undefined) HITS.push(s, end);
    }
    while (i + BASE64_RUN < e) i += BASE64_RUN;
  }
}

/** Adds the hits {@link scan} found to `out` as spans, in order, merged. */
function spansOf(widen: (at: number, end: number) => void): void {
  const hits = HITS;
  if (hits.length === 0) return;
  // Pairs sorted by start (few: a window of benign text has a handful).
  const order: number[] = [];
  for (let k = 0; k < hits.length; k += 2) order.push(k);
  order.sort((a, b) => hits[a]! - hits[b]!);
  for (const k of order) widen(hits[k]!, hits[k + 1]!);
}

/** A JSON document or a form, by the shape of its first characters. */
const JSON_SHAPE = /"\s*:\s*["\d[{tfn-]/g;
const FORM_PAIR = /^[\w.%[\]+-]*=[^\s]*$/;

/**
 * The kind of a long value, read from its source and its first characters (a body past the
 * input cap is judged from where its values were left out, so it can start anywhere).
 *
 * @param source the input's source
 * @param value the long value
 */
export function kindOf(source: string, value: string): TextKind {
  if (source === "form" || source === "query") return "encoded";
  if (source !== "body" && source !== "multipart") return "text";
  const head = value.slice(0, 2048);
  if (FORM_PAIR.test(head.slice(0, head.lastIndexOf("&") + 1 || head.length))) return "form";
  JSON_SHAPE.lastIndex = 0;
  let pairs = 0;
  while (JSON_SHAPE.exec(head) !== null) if (++pairs >= 8) return "json";
  return "text";
}

/** Raw pieces of a form's window are about this long. */
const PIECE = 512;

/**
 * The hot spans of one window, as start and end offsets in `window`, appended to `out`
 * (cleared first): each trigger whose offset lies in `[from, to)`, widened by {@link MARGIN}
 * each side, clipped to the window, merged with its neighbours.
 *
 * @param window the raw window
 * @param kind what the value is made of
 * @param plus how `+` reads in the value
 * @param from first offset whose triggers count
 * @param to end of the offsets whose triggers count
 * @param out where the spans go, two numbers each
 */
export function hotSpans(
  window: string,
  kind: TextKind,
  plus: PlusMode,
  from: number,
  to: number,
  out: number[],
  sql: number[],
): void {
  out.length = 0;
  sql.length = 0;
  HITS.length = 0;
  const checks = CHECKS[kind];
  const n = window.length;
  if (kind === "text" || kind === "json") {
    scan(window, checks, from, to);
    spansOf((at, end) => {
      add(out, at - MARGIN, end + MARGIN, n);
      addSqlStart(sql, window, at);
    });
    return;
  }
  // Forms: the window decoded piece by piece (each piece as the window is, `+` read as a
  // space), the pieces read as one text; a trigger marks the piece it lies in. A piece ends
  // after a `&`, so no escape is cut.
  const starts = PIECE_STARTS;
  const ends = PIECE_ENDS;
  starts.length = 0;
  ends.length = 0;
  let view = "";
  for (let p = from; p < to && p < n;) {
    let end = Math.min(n, p + PIECE);
    while (end < n && end - p < 2 * PIECE && window.charCodeAt(end - 1) !== 38) end++;
    let text = normalize(window.slice(p, end), plus).text;
    if (kind === "form") text = text.replaceAll("+", " ");
    starts.push(view.length);
    ends.push(p, end);
    view += text;
    p = end;
  }
  scan(view, checks, 0, view.length);
  // What decoding hides from the view: escapes of escapes and overlong UTF-8, read raw.
  const raw = RAW_ESCAPE;
  raw.lastIndex = from;
  const rawHits: number[] = [];
  for (let m = raw.exec(window); m !== null && m.index < to; m = raw.exec(window)) {
    rawHits.push(m.index);
    raw.lastIndex = m.index + SKIP;
  }
  let piece = 0;
  spansOf((at) => {
    while (piece + 1 < starts.length && starts[piece + 1]! <= at) piece++;
    while (piece > 0 && starts[piece]! > at) piece--;
    add(out, ends[2 * piece]! - MARGIN, ends[2 * piece + 1]! + MARGIN, n);
    // The SQL start, found in the decoded view, then placed in the raw piece: the shortest
    // raw prefix of the piece that decodes to as many characters.
    const d = sqlStartIn(view, at) - starts[piece]!;
    const ps = ends[2 * piece]!;
    const pe = ends[2 * piece + 1]!;
    let lo = ps;
    let hi = pe;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (normalize(window.slice(ps, pastEscape(window, mid, pe)), plus).text.length >= d) hi = mid;
      else lo = mid + 1;
    }
    const start = pastEscape(window, lo, pe);
    if (sql.length === 0 || sql[sql.length - 1]! < start) sql.push(start);
  });
  // Raw hits go in order among the others' spans.
  for (const at of rawHits) insert(out, at - MARGIN, at + MARGIN, n);
}

/**
 * Escapes that decode to what the view cannot show as it was (traversal's ENCODED_DOT, which
 * reads the raw value): an escape of an escape (`%252e`), overlong UTF-8 (`%c0%ae`, `%c0%2e`),
 * IIS `%u` escapes.
 */
const RAW_ESCAPE =
  /%(?:25)*(?:c[01]|e0%(?:25)*[89]|f0%(?:25)*8|u[0-9a-f]{4})|%(?:25)+[0-9a-f]{2}/gi;

/** Adds a span to sorted, merged spans, wherever it falls. */
function insert(out: number[], start: number, end: number, n: number): void {
  const s = start < 0 ? 0 : start;
  const e = end > n ? n : end;
  let k = 0;
  while (k < out.length && out[k + 1]! < s) k += 2;
  if (k >= out.length || out[k]! > e) {
    out.splice(k, 0, s, e);
    return;
  }
  out[k] = Math.min(out[k]!, s);
  out[k + 1] = Math.max(out[k + 1]!, e);
  // Later spans it now reaches.
  while (k + 2 < out.length && out[k + 2]! <= out[k + 1]!) {
    out[k + 1] = Math.max(out[k + 1]!, out[k + 3]!);
    out.splice(k + 2, 2);
  }
}

/** `at`, or past the percent escape it would cut (a prefix ends after whole escapes). */
function pastEscape(window: string, at: number, end: number): number {
  if (window.charCodeAt(at - 1) === 37) return Math.min(end, at + 2);
  if (window.charCodeAt(at - 2) === 37) return Math.min(end, at + 1);
  return at;
}

/** Characters a SQL start looks back over for the text a trigger belongs to. */
const SQL_LEAD = 64;
/** Quotes a SQL reading starts after (sql_lexer: strings and quoted names). */
const WORD = /\w/;

/**
 * Where a SQL reading of a trigger starts: SQL reads a quote as the start or the end of a
 * string, so what it finds after a trigger depends on how many quotes come before it (an
 * apostrophe of prose, `O'Brien`, opens a string the payload's quote then closes). A window
 * starts where it starts, so today's overlapping windows read each place with two counts; a
 * hot span's start is just as arbitrary. Each trigger is therefore also read for SQL alone from
 * close before it: from up to {@link SQL_LEAD} characters before it (the keywords a quote
 * follows: `waitfor delay '0:0:5'`), after the last quote there.
 */
function addSqlStart(sql: number[], window: string, at: number): void {
  const start = sqlStartIn(window, at);
  if (sql.length === 0 || sql[sql.length - 1]! < start) sql.push(start);
}

/** Where the SQL reading of the trigger at `at` starts in `text` (see {@link addSqlStart}). */
function sqlStartIn(window: string, at: number): number {
  let start = Math.max(0, at - SQL_LEAD);
  for (let i = at - 1; i >= start; i--) {
    const c = window.charCodeAt(i);
    if (c === 39 || c === 34 || c === 96) {
      start = i + 1;
      break;
    }
  }
  // A word is read whole.
  while (start > 0 && start < at && WORD.test(window[start - 1]!) && WORD.test(window[start]!)) {
    start++;
  }
  return start;
}

/** Where each decoded piece starts in the view, and its raw start and end in the window. */
const PIECE_STARTS: number[] = [];
const PIECE_ENDS: number[] = [];

function add(out: number[], start: number, end: number, n: number): void {
  const s = start < 0 ? 0 : start;
  const e = end > n ? n : end;
  const last = out.length - 1;
  if (last >= 1 && s - out[last]! <= JOIN) {
    if (e > out[last]!) out[last] = e;
  } else out.push(s, e);
}

/**
 * The check a candidate character has in a kind, and its {@link May}: for tests, which hold
 * the second to the first (where `may` answers false, `check` does not match).
 *
 * @param kind a text kind
 * @param code a candidate character's code
 */
export function checkOf(
  kind: TextKind,
  code: number,
): { readonly check: RegExp | null; readonly may: May | null } {
  const checks = CHECKS[kind];
  const k = checks.slot[code]!;
  return { check: checks.checks[k]!, may: checks.mays[k]! };
}
