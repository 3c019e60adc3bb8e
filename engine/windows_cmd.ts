/**
 * The Windows half of command injection: cmd.exe's own grammar (`for %%d in (...) do`,
 * `if exist ... @echo`, `%VAR:~n,m%` substrings, `^` escapes) and PowerShell (cmdlets by
 * their Verb-Noun names, aliases such as `iex`, .NET calls, encoded commands).
 *
 * Each rule names syntax rather than words: "for each day in (May) do" lacks the `%x`
 * variable, "Get-Together" is not a cmdlet, "if you echo" lacks the `@` that silences a
 * batch line.
 */

import { factorAlternation } from "./regex_factor.ts";
import { gated } from "./literal_gate.ts";
import { POWERSHELL_CMDLETS } from "./command_words.ts";

/** A Windows verdict: score, rule and where the evidence starts. */
export interface WindowsHit {
  readonly score: number;
  readonly rule: string;
  readonly at: number;
}

/** Literals one of the rules needs (the text is lower-case); most values have none. */
const HINTS = factorAlternation(
  /%|@echo|::|for\s+[/%]|if\s+(?:not|exist|errorlevel|defined|\/i|%|")|env:|cmd|iex|iwr|irm|saps|sal |\.download|powershell|pwsh/,
);
/**
 * One operand of cmd.exe's `IF`: a variable (`%1`, `%var%`), a quoted, bracketed, braced or
 * parenthesised string, or a bare word.
 */
const IF_OPERAND = String
  .raw`(?:%[^%\s]{1,32}%|%\d|"[^"\n]{0,64}"|\[[^\]\n]{0,64}\]|\([^)\n]{0,64}\)|\{[^}\n]{0,64}\}|[^\s=()"\[\]{}]{1,64})`;
/**
 * `IF [/I] [NOT] a==b command`, `IF a EQU b command`, `IF (a GEQ b) command`: cmd.exe's
 * comparison, at the start of the value or after a separator. Group 1 is the command (or
 * whatever follows), group 2 an operand that is a variable.
 */
const IF_COMPARE = new RegExp(
  String
    .raw`(?:^|[&|;(\n])\s*@?if\s*(?:\/i\s*)?(?:not\s+)?(?:\(\s*${IF_OPERAND}\s+(?:equ|neq|lss|leq|gtr|geq)\s+${IF_OPERAND}\s*\)|${IF_OPERAND}\s*(?:={2,3}|\s(?:equ|neq|lss|leq|gtr|geq)\s)\s*=?${IF_OPERAND})(?:\s+(?!then\b)(\S)|\s*$)`,
  "i",
);
/** `IF ERRORLEVEL 3 command`, `IF NOT EXIST x command`, `IF DEFINED v command`. */
const IF_CONDITION =
  /(?:^|[&|;(\n])\s*@?if\s*(?:\/i\s*)?(?:not\s+)?(?:errorlevel\s+\d+|exist\s+\S+|defined\s+\S+)\s+\S/i;
const VARIABLE = /%[^%\s]{1,32}%|%\d/;

/** Whether some `if` opens the value or follows a separator, found without a regex pass. */
function ifInCommandPosition(text: string): boolean {
  for (let at = text.indexOf("if"); at >= 0; at = text.indexOf("if", at + 2)) {
    const after = text.charCodeAt(at + 2);
    if (after !== 32 && after !== 9 && after !== 47 && after !== 40) continue;
    let p = at - 1;
    while (p >= 0 && (text.charCodeAt(p) === 32 || text.charCodeAt(p) === 9)) p--;
    if (p >= 0 && text.charCodeAt(p) === 64 /* @ */) p--;
    const c = p < 0 ? 10 : text.charCodeAt(p);
    if (c === 10 || c === 38 || c === 124 || c === 59 || c === 40) return true;
  }
  return false;
}

/**
 * Judges cmd.exe's `IF` statement: a comparison followed by a command, or one whose operand
 * is a batch variable (`if not {%1} == {}`).
 */
function judgeIf(text: string): WindowsHit | undefined {
  const condition = IF_CONDITION.exec(text);
  if (condition !== null) return { score: 90, rule: "cmdi.windows_if", at: condition.index };
  const compare = IF_COMPARE.exec(text);
  if (compare === null) return undefined;
  if (compare[1] === undefined && !VARIABLE.test(compare[0])) return undefined;
  return { score: 88, rule: "cmdi.windows_if", at: compare.index };
}

/** A PowerShell verb before its noun: the verbs of the cmdlets below. */
const CMDLET_VERB = gated(
  new RegExp(
    `\\b(?:${
      [
        ...new Set([
          ...POWERSHELL_CMDLETS.map((c) => c.slice(0, c.indexOf("-"))),
          "expand",
          "compress",
          "resolve",
        ]),
      ].join("|")
    })-[a-z]`,
  ),
);

function mayBeWindows(lower: string): boolean {
  return HINTS.test(lower) || (lower.indexOf("-") >= 0 && CMDLET_VERB.test(lower));
}

interface Rule {
  readonly re: RegExp;
  readonly score: number;
  readonly rule: string;
}

/** PowerShell cmdlets: patterns for attack tooling the list lacks, then every cmdlet of the list. */
const CMDLETS = [
  "invoke-(?:expression|webrequest|restmethod|command|item|wmimethod|shellcode|mimikatz)",
  "start-(?:process|job|bitstransfer|service|sleep)",
  "stop-(?:process|service|computer)",
  "restart-computer",
  "new-(?:object|item|service|localuser|psdrive|scheduledtask(?:action|trigger)?)",
  "get-(?:content|childitem|process|service|wmiobject|ciminstance|item(?:property)?|acl|" +
  "localuser|localgroup(?:member)?|aduser|adcomputer|credential|hotfix|netipaddress|" +
  "nettcpconnection|executionpolicy|host|command|psdrive|eventlog|winevent)",
  "set-(?:content|executionpolicy|item(?:property)?|mppreference|acl|localuser|alias)",
  "add-(?:content|type|localgroupmember|mppreference)",
  "remove-(?:item(?:property)?|localuser|mppreference)",
  "copy-item",
  "move-item",
  "rename-item",
  "out-(?:file|string|null)",
  "test-(?:connection|netconnection|path)",
  "convertto-securestring",
  "register-scheduledtask",
  "enter-pssession",
  "import-module",
  "write-(?:output|host)",
  "select-string",
  "expand-archive",
  "compress-archive",
  "resolve-dnsname",
  ...POWERSHELL_CMDLETS,
];
const CMDLET = new RegExp(`(?:^|[\\s;|&({'"\`$])(${CMDLETS.join("|")})(?=$|[\\s;|&)}'"\`(])`, "i");
/** A cmdlet followed by a parameter, a pipe or an argument: a PowerShell statement. */
const CMDLET_STATEMENT = new RegExp(
  `(?:^|[\\s;|&({'"\`$])(?:${
    CMDLETS.join("|")
  })(?:\\s*[|(]|\\s+(?:-[a-z]|['"$]|[a-z]:\\\\|\\\\\\\\|https?:|\\.{0,2}[/\\\\]))`,
  "i",
);

/** PowerShell's environment drive: `$env:USERNAME`, `gci env:`. */
const ENV_DRIVE =
  /(?:^|[\s;|&(`"'])\$env:[a-z_][\w()]*|(?:^|[;|&]\s*)(?:gci|dir|ls|get-childitem)\s+env:/i;

/** A cmdlet opening the value with one or two arguments after it and nothing else. */
const CMDLET_OPENS = new RegExp(
  `^\\s*(?:${CMDLETS.join("|")})\\s+[\\w$"'.]\\S*(?:\\s+\\S+)?\\s*$`,
  "i",
);

const RULES: readonly Rule[] = [
  {
    // The loop variable is `%` and any one character in a batch file's eyes (`%i`, `%_`, `%]`);
    // a longer name (`%variable`) is how the manual writes it.
    re:
      /\bfor\s+(?:\/[dlfr]\s+(?:"[^"]{0,200}"\s+)?(?:[^%\s]\S{0,63}\s+)?)?%%?[^\s%]{1,32}\s+in\s*\([^)]{0,400}\)\s*do\b/i,
    score: 92,
    rule: "cmdi.windows_for",
  },
  {
    re:
      /\bif\s+(?:\/i\s+)?(?:not\s+)?(?:exist\s+\S+|errorlevel\s+\d+|defined\s+\w+|%[\w:~,-]+%\s*==|"[^"]*"\s*==)[^\n]{0,200}?(?:\(|@?echo\b|\bgoto\b|\bcall\b|\bset\b)/i,
    score: 90,
    rule: "cmdi.windows_if",
  },
  { re: /(?:^|[\s&|(;])@echo\b/i, score: 85, rule: "cmdi.windows_echo" },
  {
    re:
      /%(?:comspec|systemroot|windir|programfiles|programdata|appdata|localappdata|userprofile|temp|tmp|public|allusersprofile|path|homepath|homedrive|computername|username|os|processor_architecture)(?::~-?\d+(?:,-?\d+)?)?%/i,
    score: 55,
    rule: "cmdi.windows_variable",
  },
  { re: /%[a-z_]+:~-?\d+(?:,-?\d+)?%/i, score: 88, rule: "cmdi.windows_substring" },
  {
    // `%SystemRoot%\system32\calc.exe`: a program started by its path under a system variable.
    re:
      /%(?:comspec|systemroot|windir|programfiles|programdata|appdata|localappdata|temp|tmp|public)%[\\/][^\s"'<>]{0,200}\.(?:exe|bat|cmd|ps1|vbs|hta|dll|scr)\b/i,
    score: 80,
    rule: "cmdi.windows_program",
  },
  {
    re:
      /\b(?:powershell|pwsh)(?:\.exe)?\s+(?:[-/][a-z]{1,32}\s+(?:(?!-)[^\s-]\S{0,63}\s+)?){0,8}[-/](?:e|ec|en|enc|enco|encodedcommand)\s+[A-Za-z0-9+/=]{8,}/i,
    score: 95,
    rule: "cmdi.powershell_encoded",
  },
  {
    re:
      /\b(?:powershell|pwsh)(?:\.exe)?\s+(?:[-/](?:nop|noprofile|noni|noninteractive|w|windowstyle|ep|exec|executionpolicy|c|command|f|file|sta|mta|version)\b)/i,
    score: 92,
    rule: "cmdi.powershell",
  },
  {
    re:
      /\[(?:system\.)?(?:net\.webclient|convert|text\.encoding|io\.file|io\.compression|diagnostics\.process|reflection\.assembly|runtime\.interopservices\.marshal|environment)\]\s*::\s*\w+|\bnew-object\s+(?:-typename\s+)?(?:system\.)?net\.(?:webclient|sockets\.tcpclient)|\.download(?:string|file|data)\s*\(/i,
    score: 92,
    rule: "cmdi.powershell_dotnet",
  },
  {
    re: /(?:^|[\s;|&(])(?:iex|iwr|irm|saps|sal)\s*(?:\(|\$|['"]|-\w)/i,
    score: 88,
    rule: "cmdi.powershell_alias",
  },
  {
    re: /(?:^|[&|]\s*)cmd(?:\.exe)?\s+\/[ckr]\s*\S/i,
    score: 92,
    rule: "cmdi.cmd_exe",
  },
];

/**
 * Judges a decoded value as a cmd.exe or PowerShell line.
 *
 * @param text decoded value, lower-case
 * @returns the strongest hit, or undefined
 */
export function judgeWindows(text: string): WindowsHit | undefined {
  // `if` is a common word: its grammar is read apart from the other rules' hints.
  const condition = ifInCommandPosition(text) ? judgeIf(text) : undefined;
  if (!mayBeWindows(text)) return condition;
  let best: WindowsHit | undefined = condition;
  const env = text.indexOf("env:") >= 0 ? ENV_DRIVE.exec(text) : null;
  if (env !== null && (best === undefined || best.score < 72)) {
    best = { score: 72, rule: "cmdi.powershell_env", at: env.index };
  }
  for (const r of RULES) {
    if (best !== undefined && best.score >= r.score) continue;
    const m = r.re.exec(text);
    if (m !== null) best = { score: r.score, rule: r.rule, at: m.index };
  }
  if (best === undefined || best.score < 85) {
    const statement = CMDLET_STATEMENT.exec(text);
    if (statement !== null) {
      return { score: 85, rule: "cmdi.powershell_cmdlet", at: statement.index };
    }
    if (best === undefined) {
      const cmdlet = CMDLET.exec(text);
      if (cmdlet !== null) {
        // `Start-Process calc` opening the value is a statement; inside prose, a name.
        const opens = CMDLET_OPENS.test(text);
        return { score: opens ? 75 : 50, rule: "cmdi.powershell_cmdlet", at: cmdlet.index };
      }
    }
  }
  return best;
}
