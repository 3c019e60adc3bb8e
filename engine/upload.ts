/**
 * Script uploads: a multipart file whose name makes the web server run it. An upload form
 * that stores files under the web root turns `shell.php` into a web shell; the classic
 * bypasses of an extension filter spell the same name so that the filter reads another
 * extension and the server the executable one: a second extension (`shell.php.jpg`, which
 * Apache's `AddHandler` runs), IIS's `;` (`shell.asp;.jpg`), trailing dots, spaces or an NTFS
 * stream (`shell.php.`, `shell.php::$DATA`, which Windows strips), or mixed case against a
 * case-sensitive blocklist (`shell.pHp5`). `web.config`, `.htaccess` and `.user.ini`
 * reconfigure the server for their folder.
 *
 * Only the file name of a part is read (the location `multipart:<field>.filename`); what the
 * file holds is judged as a text part by the other detectors (`GIF89a<?php ...`).
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";

/** Extensions a web server hands to an interpreter (PHP, JSP, ASP and ASP.NET, SSI, CGI). */
const SCRIPT_EXT =
  "php\\d*|phtml|pht|phar|phps|pgif|shtml?|stm|jspx?|jspf|jsw|jsv|asp|aspx|asa|asax|ashx|asmx|ascx|axd|cshtml|vbhtml|cfml?|cfc|cgi";
/** The name ends with a script extension, as written (the case is checked apart). */
const FINAL = new RegExp(`\\.(${SCRIPT_EXT})$`, "i");
/** A script extension hidden before what the filter reads: `;`, trailing dots and spaces, `::$DATA`. */
const HIDDEN = new RegExp(`\\.(?:${SCRIPT_EXT})(?:;|[.\\s]+$|::\\$data$)`, "i");
/** A script extension right before an image's: what an image-only filter lets through. */
const BEFORE_IMAGE = new RegExp(
  `[^./\\\\]\\.(?:${SCRIPT_EXT})\\.(?:jpe?g|png|gif|bmp|webp|ico|svg)$`,
  "i",
);
/**
 * Configuration files that make the server run other files as scripts: IIS's `web.config`,
 * Apache's `.htaccess` (`AddType application/x-httpd-php .jpg`), PHP's `.user.ini`
 * (`auto_prepend_file`), with what Windows strips from a name (trailing dots and spaces, `::$DATA`).
 */
const SERVER_CONFIG = /^(?:web\.config|\.htaccess|\.user\.ini)(?:[.\s]+|::\$data)?$/i;
/**
 * Extensions a web server runs only where CGI is switched on for them (`Options +ExecCGI` with
 * `AddHandler cgi-script .pl .py .sh`, a `cgi-bin`): a script upload there, a homework or a
 * code-hosting site's attachment elsewhere. Medium: they block at `strict`.
 */
const CGI_ONLY = /\.(?:pl|pm|py|rb|sh|bash)$/i;
const CGI_SCORE = 55;

/**
 * Reports a multipart file name the server would run as a script.
 *
 * @param value the decoded input
 * @returns an `rce` finding (rule `rce.script_upload`) or undefined
 */
export function scriptUpload(value: DetectorInput): Finding | undefined {
  if (!isUploadName(value.input)) return undefined;
  // Servers and filters that trim a name read `shell. php` as `shell.php` (CRS removes spaces).
  const text = SPACE.test(value.decoded) ? value.decoded.replace(SPACES, "") : value.decoded;
  if (text.length > 512) return undefined;
  const name = text.slice(Math.max(text.lastIndexOf("/"), text.lastIndexOf("\\")) + 1);
  if (SESSION_FILE.test(name)) {
    return makeFinding(
      value,
      "php",
      85,
      "php.session_file_upload",
      text,
      text.length - name.length,
    );
  }
  if (name.indexOf(".") < 0) return undefined;
  const hidden = HIDDEN.exec(name);
  if (hidden !== null) return found(value, 90, text, text.length - name.length + hidden.index);
  const final = FINAL.exec(name);
  if (final !== null) {
    // `pHp`: no one types an extension in mixed case but to slip past a case-sensitive list.
    const ext = final[1]!;
    const mixed = ext !== ext.toLowerCase() && ext !== ext.toUpperCase();
    return found(value, mixed ? 85 : 75, text, text.length - ext.length - 1);
  }
  const before = BEFORE_IMAGE.exec(name);
  if (before !== null) return found(value, 75, text, text.length - name.length + before.index);
  if (SERVER_CONFIG.test(name)) return found(value, 85, text, text.length - name.length);
  const cgi = CGI_ONLY.exec(name);
  if (cgi !== null) return found(value, CGI_SCORE, text, text.length - name.length + cgi.index);
  return undefined;
}

/**
 * Headers that AJAX uploaders send the file's name in (`X-Filename`, `X_Filename`,
 * `X.Filename`, `X-File-Name`): the server stores the body under that name.
 */
const NAME_HEADERS: ReadonlySet<string> = new Set([
  "x-filename",
  "x_filename",
  "x.filename",
  "x-file-name",
]);
const SPACE = /\s/;
const SPACES = /\s+/g;
/**
 * PHP's session files (`sess_<id>` in `session.save_path`): an upload under that name plants a
 * session whose serialised variables the attacker wrote (CRS 933220).
 */
const SESSION_FILE = /^sess_[\w,-]{20,256}$/i;

/**
 * Whether an input is an uploaded file's name: a multipart part's file name or an upload
 * header's value.
 *
 * @param input the input
 */
export function isUploadName(input: DetectorInput["input"]): boolean {
  return input.source === "multipart"
    ? input.name.endsWith(".filename")
    : input.source === "header" && NAME_HEADERS.has(input.name);
}

function found(value: DetectorInput, score: number, text: string, at: number): Finding {
  return makeFinding(value, "rce", score, "rce.script_upload", text, at);
}
