/**
 * Vocabulary of the command injection detector: which words are commands, how sure a bare
 * word is, and which first arguments make a command line unmistakable. The long lists of
 * program names are facts kept in `command_words.ts`; the words here are the ones the
 * detector gives a role (runners, network and file commands, subcommands).
 */
import {
  TOOL_FAMILIES,
  UNIX_COMMON,
  UNIX_DISTINCT,
  WINDOWS_COMMON,
  WINDOWS_DISTINCT,
} from "./command_words.ts";

/**
 * How telling a command name is. `distinct` names are almost never English words (`whoami`,
 * `wget`); `common` names are (`cat`, `type`, `sleep`) and need a command-shaped context.
 */
export type CommandKind = "distinct" | "common";

const DISTINCT = [
  "whoami",
  "uname",
  "ifconfig",
  "ipconfig",
  "netstat",
  "nslookup",
  "wget",
  "curl",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "bash",
  "sh",
  "zsh",
  "ksh",
  "csh",
  "tcsh",
  "dash",
  "busybox",
  "powershell",
  "pwsh",
  "cmd",
  "python",
  "python2",
  "python3",
  "perl",
  "ruby",
  "php",
  "telnet",
  "systeminfo",
  "sysinfo",
  "tasklist",
  "taskkill",
  "certutil",
  "bitsadmin",
  "wmic",
  "netsh",
  "nmap",
  "gcc",
  "chmod",
  "chown",
  "useradd",
  "usermod",
  "crontab",
  "base64",
  "xxd",
  "hexdump",
  "getent",
  "lsof",
  "tftp",
  "traceroute",
  "tracert",
  "whois",
  "killall",
  "pkill",
  "xargs",
  "nohup",
  "printenv",
  "shutdown",
  "msfvenom",
  "rundll32",
  "regsvr32",
  "mshta",
  "cscript",
  "wscript",
  "icacls",
  "cacls",
  "schtasks",
  "hostname",
  "passwd",
  "uptime",
  "ifup",
  "iptables",
  "sudo",
  "findstr",
  "attrib",
  "xcopy",
  "robocopy",
  "vssadmin",
  "wevtutil",
  "bcdedit",
  "fsutil",
  "nltest",
  "dsquery",
  "cmdkey",
  "runas",
  "forfiles",
  "msiexec",
  "takeown",
  "qwinsta",
  "quser",
  "klist",
  "mklink",
  "openssl",
  "rsync",
  "sftp",
  "setsid",
  "masscan",
  "tcpdump",
  "systemctl",
  "readlink",
  "base32",
  "bzip2",
  "gzip",
  "lsblk",
  "fdisk",
  "rmdir",
  "dirname",
  "basename",
] as const;

const COMMON = [
  "cat",
  "tac",
  "ls",
  "dir",
  "id",
  "pwd",
  "echo",
  "printf",
  "sleep",
  "ping",
  "type",
  "find",
  "grep",
  "egrep",
  "awk",
  "sed",
  "head",
  "tail",
  "more",
  "less",
  "touch",
  "rm",
  "cp",
  "mv",
  "mkdir",
  "kill",
  "ps",
  "set",
  "env",
  "export",
  "ver",
  "route",
  "arp",
  "dig",
  "host",
  "net",
  "reg",
  "sc",
  "which",
  "where",
  "whereis",
  "timeout",
  "tar",
  "unzip",
  "who",
  "w",
  "last",
  "df",
  "du",
  "mount",
  "history",
  "eval",
  "exec",
  "source",
  "cd",
  "del",
  "copy",
  "start",
  "call",
  "od",
  "nl",
  "strings",
  "tee",
  "file",
  "java",
  "node",
  "lua",
  "ssh",
  "scp",
  "ftp",
  "vi",
  "vim",
  "nano",
  "sort",
  "uniq",
  "cut",
  "tr",
  "wc",
  "date",
  "time",
  "rev",
  "dd",
  "ln",
  "stat",
  "ip",
  "su",
  "service",
  "locate",
  "expr",
  "seq",
  "jq",
  "ren",
  "rd",
  "md",
  "cls",
  "tree",
] as const;

/** Every known command name, mapped to how telling it is on its own (this file's kinds win). */
export const COMMANDS: ReadonlyMap<string, CommandKind> = new Map<string, CommandKind>([
  ...TOOL_FAMILIES.map((name) => [name, "common"] as const),
  ...UNIX_COMMON.map((name) => [name, "common"] as const),
  ...WINDOWS_COMMON.map((name) => [name, "common"] as const),
  ...UNIX_DISTINCT.map((name) => [name, "distinct"] as const),
  ...WINDOWS_DISTINCT.map((name) => [name, "distinct"] as const),
  ...DISTINCT.map((name) => [name, "distinct"] as const),
  ...COMMON.map((name) => [name, "common"] as const),
]);

/** Windows command names, which take their switches glued on (`bcdboot/r`, `cmd/c`). */
export const WINDOWS_NAMES: ReadonlySet<string> = new Set([
  ...WINDOWS_DISTINCT,
  ...WINDOWS_COMMON,
  "cmd",
  "dir",
  "type",
  "copy",
  "del",
  "start",
  "echo",
  "net",
  "reg",
  "sc",
  "ping",
  "whoami",
  "tasklist",
  "systeminfo",
  "ipconfig",
  "netstat",
  "findstr",
  "attrib",
]);

const FAMILIES: ReadonlySet<string> = new Set(TOOL_FAMILIES);
/** Programs installed under versioned names (`gcc10.1`, `python3.11`, `php8.2`). */
const VERSIONED: ReadonlySet<string> = new Set([
  "gcc",
  "clang",
  "python",
  "php",
  "perl",
  "ruby",
  "node",
  "lua",
  "java",
  "pip",
  "g++",
]);

/**
 * How telling a command name is, including the names the lists spell by pattern: a member of
 * a tool family (`ansible-config`, `chef-client`) and a versioned program (`gcc10.1`).
 *
 * @param name a command word, lower-case, without path or `.exe`
 * @returns its kind, or undefined when it names no command
 */
export function commandKind(name: string): CommandKind | undefined {
  const known = COMMANDS.get(name);
  if (known !== undefined) return known;
  const dash = name.indexOf("-");
  if (dash > 0 && dash < name.length - 1 && FAMILIES.has(name.slice(0, dash))) return "distinct";
  let end = name.length;
  for (
    let c = name.charCodeAt(end - 1);
    (c >= 48 && c <= 57) || c === 46;
    c = name.charCodeAt(--end - 1)
  );
  if (end === name.length || end === 0) return undefined;
  if (name.charCodeAt(end - 1) === 45 /* - */) end--;
  const base = name.slice(0, end);
  return VERSIONED.has(base) ? COMMANDS.get(base) ?? "common" : undefined;
}

/** A name no English text spells: a distinct name with a dash, digit, underscore or `+`. */
export function isCompound(name: string): boolean {
  return COMPOUND.test(name) && commandKind(name) === "distinct";
}

const COMPOUND = /[-_0-9+.]/;

/** Subcommands that make `net`, `reg`, `sc` and friends Windows administration lines. */
export const SUBCOMMANDS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  [
    "net",
    new Set([
      "user",
      "users",
      "localgroup",
      "group",
      "view",
      "share",
      "use",
      "start",
      "stop",
      "accounts",
      "session",
      "config",
    ]),
  ],
  ["reg", new Set(["add", "query", "delete", "export", "import", "save", "load"])],
  ["sc", new Set(["query", "create", "config", "start", "stop", "delete", "qc"])],
  ["netsh", new Set(["firewall", "advfirewall", "interface", "wlan", "winhttp", "http"])],
  [
    "wmic",
    new Set([
      "process",
      "os",
      "useraccount",
      "service",
      "startup",
      "qfe",
      "share",
      "nicconfig",
      "product",
      "computersystem",
      "logicaldisk",
      "shadowcopy",
      "group",
      "bios",
    ]),
  ],
  ["vssadmin", new Set(["delete", "list", "create", "resize"])],
  ["wevtutil", new Set(["cl", "clear-log", "el", "qe", "gl", "sl", "epl"])],
  ["fsutil", new Set(["file", "fsinfo", "usn", "behavior", "hardlink", "reparsepoint"])],
  ["bcdedit", new Set(["/set", "/enum", "/delete", "/deletevalue", "/copy"])],
]);

/**
 * Commands that reach out over the network: a host name as their argument (`nslookup evil.test`,
 * `curl x.oast.site`) is how an injection reports back to the attacker (out-of-band exfiltration).
 */
export const NETWORK_COMMANDS: ReadonlySet<string> = new Set([
  "nslookup",
  "dig",
  "host",
  "ping",
  "curl",
  "wget",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "telnet",
  "ssh",
  "scp",
  "sftp",
  "ftp",
  "tftp",
  "whois",
  "traceroute",
  "tracert",
]);

/** Commands whose natural argument is a file name, so `cat flag.txt` is command-shaped. */
export const FILE_COMMANDS: ReadonlySet<string> = new Set([
  "cat",
  "tac",
  "type",
  "more",
  "less",
  "head",
  "tail",
  "rm",
  "del",
  "touch",
  "source",
  "nl",
  "od",
  "strings",
  "file",
  "vi",
  "vim",
  "nano",
  "tee",
  "copy",
  "cp",
  "mv",
  "chmod",
  "unzip",
  "tar",
]);

/** Commands whose natural argument is another command (`which curl`, `xargs id`). */
export const META_COMMANDS: ReadonlySet<string> = new Set([
  "which",
  "where",
  "whereis",
  "type",
  "sudo",
  "nohup",
  "timeout",
  "xargs",
  "exec",
  "eval",
  "env",
  "time",
  "start",
  "call",
  "busybox",
  "doas",
  "nice",
  "command",
]);

/**
 * Of {@link META_COMMANDS}, those that run their argument (`sudo cat /etc/shadow`, `busybox nc
 * ...`) rather than look it up (`which curl`): the command after them is judged as if it
 * stood in their place.
 */
export const RUNNER_COMMANDS: ReadonlySet<string> = new Set([
  "sudo",
  "doas",
  "nohup",
  "exec",
  "eval",
  "env",
  "time",
  "nice",
  "busybox",
  "command",
  "strace",
  "ltrace",
  "ionice",
  "stdbuf",
  "setsid",
]);
