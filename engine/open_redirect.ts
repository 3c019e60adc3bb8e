/**
 * Open redirect detector.
 *
 * Redirect targets are URLs, so a URL alone proves nothing. What betrays a redirect attack
 * is a target spelled to defeat the application's "same site" check: protocol-relative
 * (`//evil`), slash-backslash mixes (`/\evil`, `\\evil`), control characters between slashes
 * (`/%09/evil`), schemes without slashes (`https:evil`), a trusted name used as userinfo
 * (`https://trusted@evil`) or a URL smuggled into a nested redirect parameter. Those shapes
 * score high in redirect-style parameters and medium elsewhere.
 *
 * Where a value sits decides what it can be (see {@link targetKind}). Parameters and cookies
 * (applications keep a return-to URL in either) are judged for every shape, and a plain URL to
 * another host counts only under a redirect-style name. A path segment (`/redirect/%2F%5Cevil`)
 * and a header that overrides the path (`X-Original-URL`) are judged for the shapes alone; the
 * whole path (`GET /%5Cevil.com`, which a trailing-slash redirect answers with
 * `Location: /\evil.com`) and the Referer for the shapes a value starts with, which no browser
 * sends there. A User-Agent or a custom header is no redirect target and is not judged.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";
import { percentDecode } from "./normalize.ts";

/**
 * Parameter names that applications feed to a redirect; a JSON path, an XML element path
 * (`/Envelope/Body/login/next`) or attribute (`/a@url`) is read by its last name.
 */
const REDIRECT_PARAM =
  /^(?:.*[_./@-])?(?:url|uri|redirect|redir|redirect_?ur[il]|next|return|return_?to|return_?url|returnto|continue|dest|destination|goto|go|target|forward|callback|out|to|rurl|r|u|link|location|success_?url|fail(?:ure)?_?url|back|backurl|ref|checkout_?url|login_?url|logout_?url)(?:[_.-].*)?$/i;

/** A host name or address right after the trick, so odd tokens that merely look alike pass. */
const HOST = String
  .raw`(?:[a-z0-9-]+\.)+[a-z]{2,}|\d{1,10}(?:\.\d{1,4}){0,3}\b|0x[0-9a-f]+|\[[0-9a-f:.]+\]`;
/**
 * Shapes that defeat same-site checks: `///evil`, `/\evil`, `\\evil`, `/%09/evil`, `〱evil`,
 * and `<>//evil`, which a filter that strips tags turns into `//evil`.
 */
const BYPASS = new RegExp(
  String
    .raw`^\s*(?:\/{3,}|\/*\\{1,2}|\/\\\/|\\\/|\/+[\t\n\r\v\f]+\/|\/*(?:<\s*>)+\/\/|\/*[\u3031-\u3035\u309d\u309e\u30fc\uff70\uff0f\u2215\u2044])` +
    String.raw`[\\/]*(?:[^@/\s]*@)?(?:${HOST})`,
  "i",
);
/**
 * A scheme followed by anything but exactly `//` and a host: `https:evil`, `https:///evil`,
 * `https://\evil`, `https://%09/evil`; browsers repair all of them to `https://evil`.
 */
const SCHEME_ODD_SLASHES = new RegExp(
  String
    .raw`^\s*(?:https?|ftp):(?!\/\/[^\/\\\s])[\\/\t\n\r\v\f]*(?:[^@/\s]*@)?(?:${HOST})`,
  "i",
);
/**
 * Characters that end the authority for a browser (`\`, `#`, `?`) before what a naive parser
 * reads as the rest of the host or as userinfo: `http://evil\trusted`, `http://evil#@trusted`.
 */
const AUTHORITY_CONFUSION = new RegExp(
  String.raw`^\s*https?:\/\/[^\/?#\\\s]*(?:\\@?|[#?]@)(?:${HOST})`,
  "i",
);
/** Full stops of other scripts that IDNA maps to `.`: `//evil。com` passes a dot check. */
const LOOKALIKE_DOT = /^\s*(?:https?:)?\/\/[^\/?#\s]*[\u3002\uff0e\uff61]/i;
/** A URL-shaped value whose letters were percent-encoded, which no client needs to do. */
const ENCODED_LETTERS = /%(?:25)?(?:6[1-9a-f]|7[0-9a]|4[1-9a-f]|5[0-9a])/gi;
const URL_SHAPE = /^\s*(?:https?:)?\/\/[^\/?#\s]+/i;
const SLASH_SCHEME = new RegExp(
  String.raw`^\s*\/+(?:https?:[\\/\t\n\r\v\f]*(?:${HOST}))`,
  "i",
);
/** A host followed at once by a `..` segment (`//evil/%2f..`): bait for path normalisers. */
const HOST_DOT_SEGMENT = /^\s*(?:https?:)?\/\/[^\/?#\s]+\/+\.\.(?:[\/?#]|$)/i;
const TRUSTED_USERINFO = new RegExp(
  String.raw`^\s*(?:https?:)?\/\/+[^/?#@\s]*\.[^/?#@\s]*@(?:https?:[\\/]*)?(?:${HOST})`,
  "i",
);
/**
 * A NUL or control byte inside the host (`//evil%00.com`): the check and the browser disagree on
 * where the host ends, or the browser drops it. Read on the raw value, since decoding removes NUL.
 * Both sides of the byte are host labels and the host ends where a URL's does, so a code comment
 * (`//Solution\nclass Solution { ... nums.length`, `//@ts-check\nconst a = b.c;`) is no host.
 */
const CONTROL_IN_HOST =
  // deno-lint-ignore no-control-regex -- the control bytes are what this reads
  /^\s*(?:https?:)?[\\/]{2}[\w.-]*[\x00-\x1f]+[\w-]*(?:\.[\w-]+)*\.[a-z]{2,}(?=[\/?#\\:]|$)/i;
/** Empty tags right before `//`, which a filter that strips tags removes. */
const TAGS_BEFORE_SLASHES = /^(?:<\s*>)+\/\//;
/**
 * `&` inside the authority before another host (`http://evil&trusted`): a check that splits on
 * `&` reads the trusted name, a browser the host before it. Nested query text has a `=` after
 * the `&` (`https://a.example&utm=b.example`), a host does not.
 */
const AMPERSAND_HOST = new RegExp(
  String.raw`^\s*https?:\/\/[^\/?#\\\s&]+&(?:${HOST})(?=[\/?#:\\]|$)`,
  "i",
);
const NESTED_REDIRECT =
  /[?&](?:url|next|redirect|redir|rurl|redirect_uri|redirect_url|return|returnto|return_to|dest|goto|continue)=(?:\/\/|\/\\|\\\\|%2f%2f|%5c)/i;
/**
 * Nested query parameters that set one off-site URL (`//host` or `scheme://host`, compared
 * lower-cased): three or more redirect-style names holding the same one are a scanner spraying
 * every name an application might read (`/?url=http://evil&next=http://evil&redir=...`).
 * Applications name one target (`redirect_uri`), or several different ones (a payment's
 * `success_url`, `cancel_url`, `notify_url` each point at their own page).
 */
const NESTED_PARAM = /[?&]([\w.-]{1,32})=((?:[a-z][\w+.-]*:)?\/\/[^\/?#&\s]+[^&#\s]*)/gi;
const SPRAY_NAMES = 3;
/** The names a spray counts: what redirects are named, not what shares and links are (`u`, `link`). */
const SPRAY_NAME =
  /^(?:url|next|redirect|redir|rurl|redirect_?ur[il]|return|return_?to|return_?url|dest|destination|goto|continue)$/;
const PROTOCOL_RELATIVE = /^[\s]*\/\/[a-z0-9\u0080-\uffff%-]+(?:\.[a-z0-9\u0080-\uffff%-]+)+/i;
const ABSOLUTE = /^[\s]*https?:\/\/[^/?#\s]+/i;

/**
 * What a value's place makes of it: `param` (a parameter, field or cookie: every shape, and a
 * plain URL under a redirect-style name), `path` (a path segment, or a header that overrides the
 * path: every shape, no plain URL), `start` (the whole path, or a header holding an absolute URL:
 * the shapes a value starts with, which no browser sends there), or nothing.
 */
type TargetKind = "param" | "path" | "start";

/**
 * Headers an application may redirect to: the page before (`redirect_back`, `HTTP_REFERER`) and
 * WebDAV's `Destination`, both absolute URLs; the original path and query a front proxy
 * (`X-Original-URL`, `X-Rewrite-URL`) or a forward-auth server (`X-Forwarded-Uri`) hands over,
 * which the application serves (`/redirect?url=//evil`) or sends the user back to after login.
 */
const URL_HEADERS: ReadonlyMap<string, TargetKind> = new Map([
  ["referer", "start"],
  ["destination", "start"],
  ["x-original-url", "path"],
  ["x-rewrite-url", "path"],
  ["x-forwarded-uri", "path"],
]);

function targetKind(value: DetectorInput): TargetKind | undefined {
  const input = value.input;
  switch (input.source) {
    case "path":
      return input.name === "" ? "start" : "path";
    case "header":
      return URL_HEADERS.get(input.name);
    default:
      return "param";
  }
}

/**
 * Reports redirect targets shaped to escape the application's own site.
 *
 * @param value the decoded input
 * @returns the finding, class `open-redirect`
 */
export function openRedirect(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  const c0 = text.charCodeAt(0);
  if (text.length < 4 || text.length > 2048) return undefined;
  // Only values that start like a URL or a path can be redirect targets.
  if (
    !(c0 === 47 || c0 === 92 || c0 === 104 || c0 === 72 || c0 === 102 || c0 === 32 ||
      c0 === 60 || c0 > 0x3000)
  ) {
    return undefined;
  }
  // A value that starts with `<` can only be the `<>//evil` shape: HTML posted to a CMS is not
  // judged as a redirect target.
  if (c0 === 60 && !TAGS_BEFORE_SLASHES.test(text)) return undefined;
  const kind = targetKind(value);
  if (kind === undefined) return undefined;
  const redirectParam = kind === "param" && REDIRECT_PARAM.test(value.input.name);
  const shaped = kind === "start" ? startShape(value) : shape(value);
  if (shaped !== null) {
    return makeFinding(
      value,
      "open-redirect",
      redirectParam ? 85 : 72,
      "open_redirect.bypass",
      text,
      shaped.index,
    );
  }
  if (!redirectParam) return undefined;
  if (PROTOCOL_RELATIVE.test(text)) {
    return makeFinding(value, "open-redirect", 60, "open_redirect.protocol_relative", text, 0);
  }
  if (ABSOLUTE.test(text)) {
    return makeFinding(value, "open-redirect", 30, "open_redirect.absolute", text, 0);
  }
  return undefined;
}

/** Every shape, for a value that is a redirect target by itself. */
function shape(value: DetectorInput): RegExpExecArray | null {
  const text = value.decoded;
  return BYPASS.exec(text) ?? SCHEME_ODD_SLASHES.exec(text) ?? SLASH_SCHEME.exec(text) ??
    TRUSTED_USERINFO.exec(text) ?? AUTHORITY_CONFUSION.exec(text) ?? LOOKALIKE_DOT.exec(text) ??
    HOST_DOT_SEGMENT.exec(text) ?? NESTED_REDIRECT.exec(text) ?? encodedUrl(value) ??
    controlInHost(value) ?? AMPERSAND_HOST.exec(text) ?? redirectSpray(text);
}

/** The first of {@link SPRAY_NAMES} or more redirect-style nested parameters naming one URL. */
function redirectSpray(text: string): RegExpExecArray | null {
  if (text.indexOf("&") < 0 || text.indexOf("//") < 0) return null;
  const names = new Map<string, { first: RegExpExecArray; names: Set<string> }>();
  for (const m of text.matchAll(NESTED_PARAM)) {
    const name = m[1]!.toLowerCase();
    if (!SPRAY_NAME.test(name)) continue;
    const target = m[2]!.toLowerCase();
    const seen = names.get(target) ?? { first: m, names: new Set<string>() };
    seen.names.add(name);
    if (seen.names.size >= SPRAY_NAMES) return seen.first;
    names.set(target, seen);
  }
  return null;
}

/**
 * The shapes a target starts with, which no browser or client sends in a path or a Referer:
 * a plain `//host` path (`//search.html`, sloppy joins) and nested query text are left out.
 */
function startShape(value: DetectorInput): RegExpExecArray | null {
  const text = value.decoded;
  if (value.input.source === "path" && value.input.name === "") return BYPASS.exec(text);
  return BYPASS.exec(text) ?? SCHEME_ODD_SLASHES.exec(text) ?? SLASH_SCHEME.exec(text) ??
    TRUSTED_USERINFO.exec(text) ?? AUTHORITY_CONFUSION.exec(text) ?? LOOKALIKE_DOT.exec(text) ??
    controlInHost(value) ?? AMPERSAND_HOST.exec(text);
}

/** Three or more percent-encoded letters in a value that decodes to an absolute URL. */
function encodedUrl(value: DetectorInput): RegExpExecArray | null {
  if (!value.raw.includes("%") || !URL_SHAPE.test(value.decoded)) return null;
  const letters = value.raw.match(ENCODED_LETTERS);
  return letters !== null && letters.length >= 3 ? URL_SHAPE.exec(value.decoded) : null;
}

/** The raw value, percent-decoded up to three layers, when its host holds a control byte. */
function controlInHost(value: DetectorInput): RegExpExecArray | null {
  let raw = value.raw;
  if (!raw.includes("%")) return CONTROL_IN_HOST.exec(raw);
  for (let i = 0; i < 3 && raw.includes("%"); i++) raw = percentDecode(raw);
  return CONTROL_IN_HOST.exec(raw);
}
