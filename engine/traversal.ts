/**
 * Path traversal and local file inclusion detector.
 *
 * Scanners such as dotdotpwn spell `../` in dozens of encodings (overlong UTF-8, `%u2215`,
 * full-width dots, `0x2e`, doubled escapes, invalid escapes the target server tolerates). The
 * detector first folds every spelling of "dot" and "slash" into `.` and `/`, then judges the
 * folded path by its depth and by the file it reaches, because a deep climb towards
 * `/etc/passwd` is an attack while a single `../` in a sentence or a relative link is not.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";
import { MAX_TEXT } from "./limits.ts";
import { factorAlternation } from "./regex_factor.ts";
import { gated } from "./literal_gate.ts";
import { CODE_LIBRARY, NO_CODE_ROOT, SENSITIVE_FILES } from "./lfi_files.ts";

/** Cheap gate: a value without any dot, slash or escape cannot hold a path. */
const PREFILTER = factorAlternation(
  /\.\.|[\\%\uff0e\u2215\u2216\u2044\uefc8\uf025\u2024\u29f5\u29f8\uff0f\uff3c]|0x|etc|passwd|boot|win|proc|\.ht|-inf\/|wp-config|id_[rde]|\.ssh|\.git|\.svn|\.env|var\/|usr\/|dev\/|\.ini|\.conf|\.cnf|log|\.asa|\.config|\.bash|\.aws|\.docker|\.kube|\.npmrc|inetpub|xampp|lampp|system32|\.passwd|\.netrc|\.forward|\.[a-z]*shrc|\.[rs]hosts|\.profile|\.pgpass|\.viminfo|\.gitconfig|:\/\/|data:|li4v|li5c|sam$|autoexec|config\.sys|private\/|opt\/|ntuser|pagefile|hiberfil|unattend|sysprep|_history|\.lesshst|\.credentials|\.git-credentials|\.google_auth|\.msmtprc|\.s3cfg|\.boto|\.xauthority|\.pypirc|\.gnupg|\.azure|\.password-store|tomcat-users|anaconda-ks|sys\//i,
);
/** Words of the system files the skeleton check looks for. */
const SKELETON_HINT = /etc|boot|win|proc/i;

/** Spellings of a slash that servers or decoders have been known to accept. */
const ODD_SLASH = /\\|\u2215|\u2216|\u2044|\uefc8|\uf025|\u29f5|\u29f8|\uff0f|\uff3c|0x2f|0x5c/g;
const ODD_DOT = /\uff0e|\u2024|0x2e/g;
/** Remains of invalid or overlong escapes (`%c1%8s`, `%bg%qf`) stand for a separator. */
const ESCAPE_LEFTOVER = /%[0-9a-z]{1,2}/g;
/** `%%32%%65` decodes to `%2%e`: IIS-style nibble escapes, one hex digit per escape. */
const NIBBLES = /%([0-9a-f])%([0-9a-f])/g;
/** Bytes left by overlong UTF-8 lead bytes or replacement characters carry no meaning. */
// deno-lint-ignore no-control-regex -- control bytes are exactly the noise to drop
const NOISE = /[\u0080-\u00ff\ufffd\u0000-\u0008]/g;
const MULTI_SLASH = /\/{2,}/g;
const WHITESPACE = /\s/;
const STRAY_PERCENT = /%/g;
const PERCENT_25 = /%25/g;
const SKELETON_JUNK = /(?:%u[0-9a-f]{4}|%[0-9a-z]{2}|0x[0-9a-f]{2}|[^a-z0-9])+/g;
/** System files as word sequences, anchored at the start of a skeleton. */
const SKELETON_TARGET = new RegExp(
  "^/?(?:[a-z]/)?(?:etc/(?:passwd|shadow|issue|hosts|group|motd|hostname|fstab|vfstab|" +
    "crontab|sudoers|master/passwd|shells|resolv/conf|network|os/release)|" +
    "(?:boot|win|system)/ini|windows/(?:system32|win/ini|system/ini|repair|panther)|" +
    "winnt/(?:system32|win/ini|repair)|proc/(?:self|version)/?)(?:/|$)",
);

/** One climb: two or more dots (or `?` wildcards next to a dot) followed by a separator. */
const CLIMB = /(?:^|[/=:;,"'\s])(?:\.[.?]+|\?\.)\//g;
/** A climb with a backslash at the start of the value (`..\pineapple`, `..\..\x`). */
const WINDOWS_CLIMB = /^[\s"']*\.\.\\(?![nrt"'])/;
/** Escapes of JSON and C strings, which would otherwise read as backslash separators. */
const STRING_ESCAPE = /\\[nrt"']/g;

/**
 * Files and directories an application never has a reason to serve. `strong` ones are judged
 * attacks on their own when they form the value; `weak` ones only with a climb or at the start.
 */
const STRONG_TARGET = new RegExp(SENSITIVE_FILES.join("|"));

/**
 * A UNC path to an administrative share (`\\host\c$\...`, `\\::1\admin$`): reads any file of
 * the server (or another host) through SMB, whatever the application's base directory.
 */
const UNC_ADMIN_SHARE =
  /^[\s"']*(?:\\\\|\/\/)[^\\/\s]{1,255}[\\/](?:[a-z]\$|admin\$|ipc\$|print\$|sysvol|netlogon)(?:[\\/]|$)/i;

/** An absolute path into a system directory, forming the whole value. */
const SYSTEM_ROOT =
  /^[\s"']*(?:[a-z]:)?\/(?:etc|proc|var\/log|usr\/local\/etc|private\/etc|winnt|windows\/(?:system32|repair|temp)|inetpub|xampp|opt\/lampp)\/[^\s]/;

/** Dots escaped in the raw value: `%2e`, double escapes, overlong UTF-8, `%u` and `0x` forms. */
const ENCODED_DOT =
  /%(?:25)*2e|%(?:25)*c0%(?:25)*[a-f0-9]e|%(?:25)*[ef][0-8]%(?:25)*80|%(?:25)*u(?:ff0e|002e|2024)|0x2e|%(?:25)+(?:2f|5c)|%(?:25)*c[01]%(?:25)*(?:af|9c|1c|8s|pc)/i;

/** A value ending in a server-side source or configuration file, with no spaces in it. */
const SERVER_FILE =
  /^[^\s]*\.(?:php\d?|phtml|inc|asp|aspx|asa|jsp|cgi|pl|py|rb|sh|ini|conf|cfg|config|log|xml|ya?ml|env|sql|bak|db|properties|passwd)(?:%00.*)?$/;

/** Stream wrappers that turn an include into a read of arbitrary data or a command. */
const WRAPPER = gated(
  /\b(?:php:\/\/(?:filter|input|fd|memory|temp|stdin)|phar:\/\/|zip:\/\/|expect:\/\/|glob:\/\/|compress\.(?:zlib|bzip2):\/\/|ogg:\/\/|rar:\/\/|ssh2\.\w+:\/\/|data:(?:\/\/)?text\/plain|file:\/\/?[/\\a-z.])/i,
);

/** A NUL byte still encoded in the raw value right after a file name. */
const NUL_TRUNCATION = gated(
  /\.[a-z0-9]{1,5}(?:%00|%2500|\\0|\\x00|\\u0000)(?:$|[./\\a-z0-9#;%])/i,
);

/** Parameter names that suggest the value is handed to a file API. */
export const FILE_PARAM =
  /(?:^|[^a-z])(?:file|path|page|include|inc|template|tpl|doc|document|folder|dir|load|read|view|show|lang|locale|download|filename|src|source|conf|config|style|layout|module|cat|action|content)(?:$|[^a-z])/i;

/** `../` spelled in base64 (`Li4v`), so a base64 parameter hides nothing. */
const BASE64_CLIMB = /^(?:Li4v|Li5c|Li4u)[A-Za-z0-9+/]*={0,2}$/;

/**
 * A value that is one backslash path and nothing else (`..\\..\\ntuser.dat`,
 * `C:\\Windows\\repair\\sam`): every backslash in it separates names, so `\\n`, `\\r` and `\\t`
 * open the names `ntuser.dat`, `repair` and `temp`, not string escapes.
 */
const BACKSLASH_PATH =
  /^[\s"']*(?:[a-z]:|[\p{L}\p{N}_.()+,~@{}[\]$-]+)?(?:\\+[\p{L}\p{N}_ .()+,~@{}[\]$-]+)+\\?[\s"']*$/iu;
/** A backslash before `n`, `r` or `t`: a string escape, or the start of a name in a path. */
const ESCAPE_LIKE = /\\[nrt]/;
/** A climb opening the value, backslash-separated. */
const WINDOWS_CLIMB_PATH = /^[\s"']*\.\.\\/;

/** Whether the value is one backslash path whose names may start with `n`, `r` or `t`. */
function plainBackslashPath(text: string): boolean {
  return ESCAPE_LIKE.test(text) && text.length <= MAX_MODULE_PATH && BACKSLASH_PATH.test(text);
}

/**
 * Folds every spelling of dot and slash to plain `.` and `/`, lower-case. `escapes`: a
 * backslash before `n`, `r`, `t` or a quote is a JSON or C string escape (a blank), not a
 * separator.
 */
function fold(text: string, escapes = true): string {
  let t = text.toLowerCase();
  if (escapes && t.indexOf("\\") >= 0) t = t.replace(STRING_ESCAPE, " ");
  t = t.replace(ODD_SLASH, "/").replace(ODD_DOT, ".");
  if (t.indexOf("%") >= 0) {
    t = t.replace(
      NIBBLES,
      (_m, hi: string, lo: string) => String.fromCharCode(parseInt(hi + lo, 16)),
    )
      .replace(ESCAPE_LEFTOVER, "/").replace(STRAY_PERCENT, "").replace(ODD_SLASH, "/");
  }
  t = t.replace(NOISE, "");
  return t.replace(MULTI_SLASH, "/");
}

/**
 * Reduces a value to its words joined by `/`: every escape, however broken or overlong, and
 * every punctuation run becomes one separator. Only the words survive, so a value whose first
 * words are `etc/passwd` or `boot/ini` climbs to a system file whatever the encoding was.
 */
function skeleton(text: string): string {
  let t = text.toLowerCase();
  for (let i = 0; i < 3 && t.indexOf("%25") >= 0; i++) t = t.replace(PERCENT_25, "%");
  return t.replace(SKELETON_JUNK, "/");
}

function countClimbs(folded: string): number {
  CLIMB.lastIndex = 0;
  let n = 0;
  while (CLIMB.exec(folded) !== null) {
    n++;
    CLIMB.lastIndex--;
  }
  return n;
}

/** True when everything before `at` is path punctuation, a drive letter or a wrapper. */
function isAnchored(folded: string, at: number): boolean {
  for (let i = 0; i < at; i++) {
    const c = folded.charCodeAt(i);
    // . / ? : space quotes, and a drive letter such as `c:`
    if (c === 46 || c === 47 || c === 63 || c === 58 || c === 32 || c === 34 || c === 39) continue;
    if (c >= 97 && c <= 122 && folded.charCodeAt(i + 1) === 58) continue;
    return false;
  }
  return true;
}

/**
 * A value that is one absolute path and nothing else: a drive or a root, then plain names
 * (letters, digits, blanks and the punctuation of `Program Files (x86)` or `v4.0.30319`).
 */
const WHOLE_PATH = /^[\s"']*(?:[a-z]:)?(?:[\\/]+[\p{L}\p{N}_ .()+,~@{}[\]-]+)+$/iu;
/** Longer than any path a loader reports (Windows' own limit without `\\?\` is 260). */
const MAX_MODULE_PATH = 1024;
const BACKSLASHES = /\\/g;

/**
 * Whether the value names a module a program loaded, the way crash reports, telemetry and
 * upload forms name one (`C:\Windows\System32\vcruntime140.dll`,
 * `/usr/local/lib/php/extensions/redis.so`): one plain absolute path to a code library, with no
 * escaped dot or slash and outside the directories that hold no code. Its directory being a
 * system one says nothing: the file it names is an image, which no file-read attack is after,
 * unless the name is itself a target (`system32\cmd.exe`, `C:\pagefile.sys`).
 */
function isModulePath(value: DetectorInput, text: string): boolean {
  if (text.length > MAX_MODULE_PATH || !WHOLE_PATH.test(text)) return false;
  // A plain path: every backslash is a separator, `\ntdll.dll` included (fold() reads `\n`
  // as a string escape, which a path of plain names cannot hold).
  const path = text.toLowerCase().replace(BACKSLASHES, "/").replace(MULTI_SLASH, "/");
  const slash = path.lastIndexOf("/");
  if (!CODE_LIBRARY.test(path.slice(slash + 1))) return false;
  if (NO_CODE_ROOT.test(path) || ENCODED_DOT.test(value.raw)) return false;
  const parent = path.lastIndexOf("/", slash - 1);
  return !STRONG_TARGET.test(parent < 0 ? path : path.slice(parent));
}

/** Flat parameters, whose name is all the application says about what it does with them. */
const FLAT_SOURCES: ReadonlySet<string> = new Set([
  "query",
  "form",
  "cookie",
  "multipart",
  "header",
]);

/**
 * A module path in a system directory: medium only where a flat parameter's name says a file
 * API takes it (`?file=C:\Windows\System32\kernel32.dll`, a probe for an absolute read). In a
 * JSON or XML document the keys describe the data (a stack frame's `package`, an image's
 * `code_file`), and an upload's file name describes the file sent.
 */
function modulePath(value: DetectorInput, folded: string): Finding | undefined {
  const input = value.input;
  if (!FLAT_SOURCES.has(input.source) || input.name.endsWith(".filename")) return undefined;
  if (!FILE_PARAM.test(input.name)) return undefined;
  return makeFinding(value, "lfi", 45, "lfi.module_path", folded, 0);
}

/** The targets that are directories where services keep their data, not system files. */
const DATA_DIRECTORY = /^\/?(?:var|usr\/local)\//;
/** Two words and a space before a path: the path is named in a sentence. */
const PROSE_BEFORE = /[a-z]{2,}[\s,.:;]+[a-z]{2,}[^/]*\s$/;
/** Characters that open a word of prose: a blank, a backtick, a bracket or a quote. */
const WORD_OPENING = /[\s`("'\[]/;

/**
 * Whether the rooted path whose slash is at `slash` opens a word of a sentence: set off by a
 * blank (or a code span's backtick after one) and preceded by at least two words.
 */
function inProse(folded: string, slash: number): boolean {
  if (slash <= 0 || !WORD_OPENING.test(folded.charAt(slash - 1))) return false;
  const lead = folded.slice(Math.max(0, slash - 80), slash - 1);
  return PROSE_BEFORE.test(folded.charAt(slash - 1) === "`" ? lead : lead + " ");
}

function judgePath(value: DetectorInput, text: string): Finding | undefined {
  const windowsPath = plainBackslashPath(text);
  const folded = fold(text, !windowsPath);
  const climbs = countClimbs(folded);
  const target = STRONG_TARGET.exec(folded);
  if (climbs === 0 && (target !== null || SYSTEM_ROOT.test(folded))) {
    if (isModulePath(value, text)) return modulePath(value, folded);
  }
  if (target !== null) {
    const at = target.index;
    if (climbs > 0) {
      return makeFinding(value, "lfi", 95, "lfi.traversal_target", folded, Math.max(0, at - 40));
    }
    if (isAnchored(folded, at)) {
      return makeFinding(value, "lfi", 85, "lfi.sensitive_file", folded, at);
    }
    const slash = folded.charCodeAt(at) === 47 ? at : at - 1;
    const before = folded.charCodeAt(slash);
    // `/etc/passwd` inside a longer value (a URL, a parameter, a shell line) is still a file
    // reference; after a space it may just be prose that names the file, and so may a data
    // directory opening a word of a sentence (`data lives in /var/lib/postgresql`,
    // `` `du /var/log` ``): runbooks name those, while a system file (`/etc/shadow`) stays 75.
    const named = before === 47 && DATA_DIRECTORY.test(target[0]) && inProse(folded, slash);
    const score = before === 47 && !named ? 75 : 45;
    return makeFinding(value, "lfi", score, "lfi.sensitive_file", folded, Math.max(0, at - 1));
  }
  if (climbs === 0) {
    const root = SYSTEM_ROOT.exec(folded);
    if (root !== null && value.input.source !== "path") {
      return makeFinding(value, "lfi", 80, "lfi.system_path", folded, root.index);
    }
    return undefined;
  }
  const first = folded.indexOf("..");
  const at = first < 0 ? 0 : first;
  const input = value.input;
  if (input.source === "multipart" && input.name.endsWith(".filename")) {
    // A browser sends a file's base name only: a climb in it aims the upload's destination.
    return makeFinding(value, "lfi", 85, "lfi.filename_traversal", folded, at);
  }
  if (ENCODED_DOT.test(value.raw)) {
    // Browsers never escape a dot, let alone twice: an escaped climb is deliberate.
    return makeFinding(value, "lfi", climbs >= 2 ? 80 : 72, "lfi.encoded_traversal", folded, at);
  }
  if (climbs >= 3) return makeFinding(value, "lfi", 80, "lfi.deep_traversal", folded, at);
  if (first >= 0 && isAnchored(folded, first) && SERVER_FILE.test(folded)) {
    // The whole value climbs out to a server-side source or configuration file.
    return makeFinding(value, "lfi", 72, "lfi.traversal_file", folded, at);
  }
  // `..\x` opening the value: a Windows climb, which no link or relative URL spells.
  if (WINDOWS_CLIMB.test(text) || (windowsPath && WINDOWS_CLIMB_PATH.test(text))) {
    return makeFinding(value, "lfi", 72, "lfi.traversal", folded, at);
  }
  const fileParam = FILE_PARAM.test(value.input.name);
  if (climbs === 2) {
    return makeFinding(value, "lfi", fileParam ? 72 : 50, "lfi.traversal", folded, at);
  }
  return makeFinding(value, "lfi", fileParam ? 45 : 25, "lfi.traversal", folded, at);
}

/**
 * Reports directory traversal, sensitive file paths and file-inclusion stream wrappers.
 *
 * @param value the decoded input
 * @returns the strongest finding, scored by climb depth and the file targeted
 */
export function traversal(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  if (text.indexOf("$") >= 0) {
    const unc = UNC_ADMIN_SHARE.exec(text);
    if (unc !== null) return makeFinding(value, "lfi", 92, "lfi.unc_share", text, unc.index);
  }
  if (!PREFILTER.test(text) && value.raw.indexOf("%") < 0) return undefined;
  const capped = text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text;
  let best = judgePath(value, capped);
  if (best !== undefined && best.score >= 90) return best;
  if (best === undefined || best.score < 85) {
    // Broken or overlong escapes can survive decoding as letters; the raw value's words
    // still show a climb straight into a system file.
    const raw = value.raw.length > MAX_TEXT ? value.raw.slice(0, MAX_TEXT) : value.raw;
    // The whitespace test first: it is cheaper than two skeletons of a long text.
    if (
      !WHITESPACE.test(capped) && SKELETON_HINT.test(raw) &&
      (SKELETON_TARGET.test(skeleton(raw)) || SKELETON_TARGET.test(skeleton(capped))) &&
      // A module path's words (`c/windows/system32/ntdll/dll`) climb nowhere: judged above.
      !isModulePath(value, capped)
    ) {
      return makeFinding(value, "lfi", 90, "lfi.encoded_traversal", capped, 0);
    }
  }

  const wrapper = WRAPPER.exec(capped);
  if (wrapper !== null) {
    const w = wrapper[0].toLowerCase();
    const score = w.startsWith("file:") || w.startsWith("data:") ? 80 : 92;
    best = stronger(best, makeFinding(value, "lfi", score, "lfi.wrapper", capped, wrapper.index));
  }
  const raw = value.raw;
  if (raw.indexOf("%") >= 0 || raw.indexOf("\\") >= 0) {
    const nul = NUL_TRUNCATION.exec(raw);
    if (nul !== null) {
      // `name.php%00.jpg` cuts off an extension the application appends; a NUL at the very
      // end only matters together with a climb or a system file.
      const alone = nul[0].endsWith(".") ? 72 : 40;
      const score = best !== undefined && best.score >= 40 ? Math.max(best.score, 70) + 10 : alone;
      best = stronger(best, makeFinding(value, "lfi", score, "lfi.null_byte", raw, nul.index));
    }
  }
  if (BASE64_CLIMB.test(capped)) {
    let plain = "";
    try {
      plain = atob(capped);
    } catch {
      plain = "";
    }
    const inner = plain === "" ? undefined : judgePath(value, plain);
    if (inner !== undefined) {
      best = stronger(best, { ...inner, score: Math.max(inner.score, 75), ruleId: "lfi.base64" });
    }
  }
  return best;
}
