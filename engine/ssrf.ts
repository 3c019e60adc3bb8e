/**
 * Server-side request forgery and remote file inclusion detector.
 *
 * A URL in a parameter is normal; a URL whose host is the server itself, the private
 * network or the cloud metadata service is what a forged request needs, and so is a scheme
 * that speaks raw protocols (`gopher://`, `dict://`). Hosts are parsed the way URL parsers
 * and `inet_aton` read them, so `http://0x7f.1/`, `http://2130706433/` and
 * `http://[::ffff:127.0.0.1]/` count as loopback, and an address spelled in such a way is
 * suspicious even when it is public.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding, stronger } from "./make_finding.ts";
import { classifyHost, isKubernetesApi } from "./host_address.ts";
import { factorAlternation } from "./regex_factor.ts";

const MAX_URLS = 8;
/** A scheme followed by `//` or a backslash, anywhere a URL can start. */
const URL_START = /(?:^|[\s"'=(<,;|@>`])([a-z][a-z0-9+._-]{1,15}):(?:\/\/|\\\\|\/\\|\\\/)/gi;
/** Apache's `unix:/path|http://host/` proxy syntax: the socket path reaches any backend. */
const UNIX_SOCKET_TARGET = /^\|(?:https?|fcgi|ajp|wss?|uwsgi|scgi|h2c?):\/\//i;
const SPACE = /\s/;

/** Offset of a `unix:...|scheme://` proxy target, found with one forward scan, or -1. */
function unixSocketProxy(text: string): number {
  const lower = text.toLowerCase();
  let at = lower.indexOf("unix:");
  while (at >= 0) {
    const bar = lower.indexOf("|", at + 5);
    if (bar < 0) return -1;
    // The socket path has no spaces; the next candidate starts after the last one seen.
    let space = -1;
    for (let i = at + 5; i < bar; i++) {
      if (SPACE.test(text[i]!)) {
        space = i;
        break;
      }
    }
    if (space < 0 && UNIX_SOCKET_TARGET.test(text.slice(bar, bar + 12))) return at;
    at = lower.indexOf("unix:", space < 0 ? bar : space);
  }
  return -1;
}

/** Schemes that talk raw protocols and have no business in a parameter. */
const RAW_SCHEMES: ReadonlySet<string> = new Set([
  "gopher",
  "dict",
  "ldap",
  "ldaps",
  "tftp",
  "jar",
  "netdoc",
  "sftp",
  "telnet",
  "rmi",
  "iiop",
  "ssh2.exec",
  // Python's urllib reads `local_file://` as `file://`.
  "local_file",
]);
/**
 * Java's `jar:` around a remote URL (`jar:http://host/x.jar!/`) fetches and opens the archive.
 * `jar:file:` is left out: stack traces print it.
 */
const JAR_REMOTE = /(?:^|[\s"'=(<,;|@>`])jar:(?:https?|ftp):\/\//i;
/**
 * Paths of the cloud instance-metadata services, which serve credentials: reached through any
 * host name (DNS rebinding, an alias), the path still names the service. Each path ends where
 * the service's does (`/latest/user-data` but not `/latest/user-data-export.csv`,
 * `/metadata/instance` but not `/metadata/instance-types`), OpenStack's and Oracle's name the
 * document, AWS Lambda's runtime API (`/2018-06-01/runtime/invocation/next`, the event and its
 * credentials) is named by its dated path, and ECS's `/v2/credentials/` is left to its address (169.254.170.2): Twilio's API has
 * `/v2/Credentials/CR...` and other APIs a credentials resource of their own.
 */
export const METADATA_PATH =
  /^\/(?:latest\/(?:meta-data|user-data|dynamic\/instance-identity|api\/token)(?![\w.-])|computeMetadata\/v1(?:beta1)?\/|metadata\/(?:identity\/oauth2\/token|instance)(?![\w.-])|openstack\/(?:latest|\d{4}-\d\d-\d\d)\/(?:meta_data|user_data|vendor_data2?|network_data|password)|opc\/v[12]\/(?:instance|identity|vnics)|hetzner\/v1\/metadata|2018-06-01\/runtime\/invocation\/)/i;
/** The Kubernetes API's paths (`/api/v1/namespaces/default/secrets`, `/apis/apps/v1/...`). */
const KUBERNETES_API_PATH = /^\/(?:api|apis)\/[\w.-]+/;
const FETCH_SCHEMES: ReadonlySet<string> = new Set(["http", "https", "ftp", "ws", "wss", "file"]);
const HOST_END = /[/?#\\\s"'<>]/;
/** Digits and letters enclosed in circles or brackets, which IDNA maps back to ASCII. */
const ENCLOSED = /[\u2460-\u24ff\u2776-\u2793\uff10-\uff5a]/;
/** Parameter names that usually carry a file to include. */
const INCLUDE_PARAM =
  /(?:^|[^a-z])(?:file|page|include|inc|template|tpl|path|doc|document|load|read|require|module|lang|conf|style|pg|cat|dir|show|view|content)(?:$|[^a-z])/i;
/** A remote script or text file, often cut with `?` or a NUL so the app's suffix is ignored. */
const INCLUDE_CUT = /\.(?:txt|inc|sh|pl|py|php\d?|phtml|jsp|aspx?|cgi)(?:\?+$|%00)/i;
/** A remote script or text file with nothing after it. */
const INCLUDE_FILE = /\.(?:txt|inc|sh|pl|py)$/i;
/** A URL cut with trailing `?` (or `#`, `%00`): whatever the application appends is ignored. */
const TRAILING_CUT = /(?:\?+|#|%00|\0)$/;
/** Parameters of known file-inclusion flaws (Mambo, Gallery, phpBB-era applications). */
const KNOWN_INCLUDE_PARAM =
  /^(?:mosConfig_absolute_path|_CONF\[path\]|_SERVER\[DOCUMENT_ROOT\]|GALLERY_BASEDIR|path\[docroot\]|appserv_root|config\[root_dir\]|phpbb_root_path|includedir|include_path|root_path|base_path|abs_path)$/i;

/**
 * Out-of-band interaction services: their only use is to receive the DNS lookup or request a
 * blind injection makes (Burp Collaborator, interactsh, dnslog), or to redirect a server's
 * request where a test points it (r3dir.me), so their names in a request are the probe itself.
 */
const OAST_HINT = factorAlternation(
  /oast|interact|collaborator|dnslog|ceye\.io|canarytoken|xss\.ht|bxss|eyes\.sh|r3dir\.me/i,
);
const OAST_HOST =
  /(?:^|[^a-z0-9-])(?:[a-z0-9-]{1,63}\.){1,8}(?:interact\.sh|interactsh\.com|oast\.(?:pro|live|site|online|fun|me)|oastify\.com|burpcollaborator\.net|dnslog\.(?:cn|link)|ceye\.io|canarytokens\.com|xss\.ht|bxss\.me|eyes\.sh|r3dir\.me)(?![a-z0-9-])/i;

/** Ports of local development servers: a developer's app legitimately points at them. */
const DEV_PORT = /^localhost:(?:3\d{3}|4200|5000|5173|8000|8080|8081|8443|8888)(?:[/?#]|$)/;

/**
 * Remote file inclusion: a URL value an application would include as code. The signs are a
 * cut (`http://evil/shell.txt?`), a script or text file, an address instead of a name, or a
 * parameter known from inclusion flaws.
 */
function remoteInclude(
  value: DetectorInput,
  text: string,
  at: number,
  kind: string,
): Finding | undefined {
  const include = INCLUDE_PARAM.test(value.input.name) ||
    KNOWN_INCLUDE_PARAM.test(value.input.name);
  const known = KNOWN_INCLUDE_PARAM.test(value.input.name);
  const trimmed = text.trimEnd();
  let score = 0;
  if (known) score = 88;
  else if (INCLUDE_CUT.test(value.raw)) score = include ? 85 : 50;
  else if (include && TRAILING_CUT.test(trimmed) && trimmed.length > at + 10) score = 85;
  else if (kind === "public") score = include ? 80 : 72;
  else if (INCLUDE_FILE.test(text)) score = include ? 65 : 30;
  return score === 0 ? undefined : makeFinding(value, "rfi", score, "rfi.remote_include", text, at);
}

/** Extracts `host[:port]` of the URL that starts at `from` (just after `scheme:`). */
function authorityOf(text: string, from: number): string {
  let i = from;
  while (i < text.length && (text[i] === "/" || text[i] === "\\")) i++;
  let end = i;
  while (end < text.length && !HOST_END.test(text[end]!)) end++;
  const authority = text.slice(i, end);
  const at = authority.lastIndexOf("@");
  return at >= 0 ? authority.slice(at + 1) : authority;
}

/** The start of the path of the URL whose authority starts at `from` ("" when it has none). */
function pathStart(text: string, from: number): string {
  let i = from;
  while (i < text.length && (text[i] === "/" || text[i] === "\\")) i++;
  const slash = text.indexOf("/", i);
  if (slash < 0) return "";
  // The path must follow the authority directly (no query or fragment in between).
  for (let j = i; j < slash; j++) if (HOST_END.test(text[j]!)) return "";
  return text.slice(slash, slash + 64);
}

/** The host part of an authority, IPv6 kept in brackets. */
function hostOf(authority: string): string {
  if (authority.charCodeAt(0) === 91 /* [ */) {
    const close = authority.indexOf("]");
    return close > 0 ? authority.slice(0, close + 1) : authority;
  }
  const colon = authority.indexOf(":");
  return colon >= 0 ? authority.slice(0, colon) : authority;
}

/**
 * A value that starts with a host and a path, without a scheme (`localhost/`,
 * `169.254.169.254/latest`): HTTP clients and frameworks that prepend `http://` fetch it
 * (CRS ssrf-no-scheme.data). A host alone (`localhost`, `localhost:3306`, an installer's
 * database host), a network in CIDR notation (`10.0.0.0/8`) and numbers (`2023/07/03`,
 * `1645783940/`, which `inet_aton` would read as addresses) are not URLs.
 */
const BARE_HOST =
  /^\s*(?:\/\/)?([a-z][a-z0-9.-]{0,252}|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:.]{2,45}\])(?::\d{1,5})?\//i;
const CIDR = /^\s*[\d.]+\/\d{1,2}\s*$/;

function bareHost(value: DetectorInput, text: string): Finding | undefined {
  const m = BARE_HOST.exec(text);
  if (m === null || CIDR.test(text)) return undefined;
  const info = classifyHost(m[1]!.toLowerCase());
  const score = info.obfuscated
    ? 0
    : info.kind === "metadata"
    ? 90
    : info.kind === "loopback"
    ? 75
    : info.kind === "private"
    ? 45
    : 0;
  return score === 0
    ? undefined
    : makeFinding(value, "ssrf", score, "ssrf.schemeless_host", text, m.index);
}

/**
 * Reports URLs that reach internal, loopback or metadata addresses, raw-protocol schemes
 * and remote file inclusion.
 *
 * @param value the decoded input
 * @returns the strongest finding, class `ssrf` or `rfi`
 */
export function ssrf(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  if (OAST_HINT.test(text)) {
    const oast = OAST_HOST.exec(text);
    if (oast !== null) {
      return makeFinding(value, "ssrf", 88, "ssrf.oast_callback", text, oast.index);
    }
  }
  if (text.indexOf("://") < 0 && text.indexOf("/") >= 0) {
    const bare = bareHost(value, text);
    if (bare !== undefined) return bare;
  }
  if (text.indexOf(":") < 0) return undefined;
  if (text.indexOf("nix:") >= 0 || text.indexOf("NIX:") >= 0) {
    const unix = unixSocketProxy(text);
    if (unix >= 0) return makeFinding(value, "ssrf", 90, "ssrf.unix_socket_proxy", text, unix);
  }
  const source = value.input.source;
  // Browsers fill Referer and Origin with the page's own URL, often on a private network.
  const browserHeader = source === "header" &&
    (value.input.name === "referer" || value.input.name === "origin");
  let best: Finding | undefined;
  if (text.indexOf("jar:") >= 0 || text.indexOf("JAR:") >= 0) {
    const jar = JAR_REMOTE.exec(text);
    if (jar !== null) {
      const at = jar.index + jar[0].toLowerCase().indexOf("jar:");
      best = makeFinding(value, "ssrf", at <= 2 ? 90 : 75, "ssrf.raw_scheme", text, at);
    }
  }
  URL_START.lastIndex = 0;
  // A URL's scheme is followed by `:/` or `:\`; text without either has none to read.
  const urls = text.indexOf(":/") >= 0 || text.indexOf(":\\") >= 0;
  let m: RegExpExecArray | null;
  for (let n = 0; urls && n < MAX_URLS && (m = URL_START.exec(text)) !== null; n++) {
    const scheme = m[1]!.toLowerCase();
    const at = m.index + m[0].indexOf(m[1]!);
    const atStart = at <= 2;
    if (RAW_SCHEMES.has(scheme)) {
      best = stronger(
        best,
        makeFinding(value, "ssrf", atStart ? 90 : 75, "ssrf.raw_scheme", text, at),
      );
      continue;
    }
    if (!FETCH_SCHEMES.has(scheme)) {
      // Any other scheme aimed at the metadata service, loopback or an obfuscated address
      // (`rsync://[::ffff:169.254.169.254]`, `ssh://0177.0.0.1`) is a forged request too.
      const other = classifyHost(hostOf(authorityOf(text, at + scheme.length + 1).toLowerCase()));
      if (other.kind === "metadata" || other.kind === "loopback" || other.obfuscated) {
        const score = other.kind === "metadata" ? 90 : other.obfuscated ? 80 : atStart ? 75 : 60;
        best = stronger(best, makeFinding(value, "ssrf", score, "ssrf.internal_host", text, at));
      }
      continue;
    }
    const authority = authorityOf(text, at + scheme.length + 1).toLowerCase();
    // A browser fills Referer and Origin with the page's URL: a site's own `/metadata/instance`
    // page is no metadata service.
    const path = scheme === "file" || browserHeader ? "" : pathStart(text, at + scheme.length + 1);
    let host = hostOf(authority);
    if (
      path !== "" &&
      (METADATA_PATH.test(path) || (isKubernetesApi(host) && KUBERNETES_API_PATH.test(path)))
    ) {
      best = stronger(best, makeFinding(value, "ssrf", 85, "ssrf.metadata_path", text, at));
    }
    const enclosed = ENCLOSED.test(host);
    if (enclosed) host = host.normalize("NFKC");
    const info = classifyHost(host);
    let score = 0;
    let rule = "ssrf.internal_host";
    if (info.kind === "metadata") score = 95;
    else if (info.kind === "loopback") {
      score = browserHeader ? 0 : DEV_PORT.test(authority) ? 55 : atStart ? 88 : 72;
    } else if (info.kind === "private") score = browserHeader ? 0 : atStart ? 60 : 45;
    if (info.obfuscated || enclosed) {
      // Nobody writes 0x7f.1 or ①②⑦.⓪.⓪.① by accident.
      score = Math.max(score + 10, 80);
      rule = "ssrf.obfuscated_host";
    }
    if (score > 0) best = stronger(best, makeFinding(value, "ssrf", score, rule, text, at));
    if (atStart && source !== "header" && scheme !== "file") {
      best = stronger(best, remoteInclude(value, text, at, info.kind));
    }
  }
  return best;
}
