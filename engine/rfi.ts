/**
 * Remote file inclusion that `ssrf.ts` (which judges URLs with a host) does not read: probes that
 * name no host, a URL scheme cut off by question marks (`https?`, `ftps??`, `file?`), which a
 * scanner sends to see whether a parameter reaches an include that fetches URLs (the `?` turns
 * what the application appends into a query string); and includes over SMB, which Windows file
 * APIs (PHP's `include` among them) open like local paths: `\\203.0.113.9\share\x.php`,
 * `\\?\UNC\host\share\x`, `smb://host/share/x`.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";
import { FILE_PARAM } from "./traversal.ts";

/** A UNC path or an SMB URL: host, then share, then a path; groups: the host, the rest. */
const SMB_PATH =
  /^\s*["']?(?:\\\\\?\\unc\\|\\\\|smb:\/\/)([^\\/\s?]{1,255})[\\/]([^\s"']{1,1024})$/i;
/** The host is an IPv4 literal: no intranet path names a share by address. */
const IP_HOST = /^\d{1,3}(?:\.\d{1,3}){3}$/;
/** The remote file is a script or text an include runs. */
const INCLUDED_FILE = /\.(?:php\d?|phtml|inc|txt|asp|aspx|jsp|sh|pl|py|cgi)$/i;

/** A scheme an include can fetch from, then only question marks: the whole value. */
const CUT_SCHEME = /^\s*(?:file|ftps?|https?)\?+\s*$/i;

/** Escaped slashes of a raw value. */
const ESCAPED_SLASH = /%5c|%2f/gi;

function slash(escape: string): string {
  return escape.endsWith("2f") || escape.endsWith("2F") ? "/" : "\\";
}

/**
 * {@link SMB_PATH} in a text. The raw value is read too: the decoder reads `\\203...` as an
 * octal escape, which a UNC path to an address begins with.
 */
function smbPath(text: string): RegExpExecArray | undefined {
  return SMB_LEAD.test(text) ? SMB_PATH.exec(text) ?? undefined : undefined;
}

/** How an SMB path or an escaped one starts (the path is the whole value): looked at once. */
const SMB_LEAD = /^\s*["']?(?:\\|smb:|%5c)/i;

/**
 * Reports a fetchable URL scheme followed by question marks, and SMB paths to remote shares.
 *
 * @param value the decoded input
 * @returns an `rfi` finding or undefined
 */
export function rfiProbe(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  if (text.length <= 16 && text.indexOf("?") >= 0 && CUT_SCHEME.test(text)) {
    return makeFinding(value, "rfi", 72, "rfi.cut_scheme", text, 0);
  }
  const raw = value.raw;
  const smb = smbPath(text) ??
    (SMB_LEAD.test(raw) ? smbPath(raw.replace(ESCAPED_SLASH, slash)) : undefined);
  if (smb === undefined) return undefined;
  // An intranet share named by host is a file server; by address, or reaching a script, an
  // include from elsewhere.
  const score = IP_HOST.test(smb[1]!) || INCLUDED_FILE.test(smb[2]!)
    ? 80
    : FILE_PARAM.test(value.input.name)
    ? 72
    : 45;
  return makeFinding(value, "rfi", score, "rfi.smb_include", text, smb.index);
}
