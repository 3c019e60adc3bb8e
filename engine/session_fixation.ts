/**
 * Session fixation: planting a session identifier the attacker knows, so the victim's
 * later login authenticates the attacker's session.
 *
 * Two shapes: markup or script that sets a cookie in the victim's browser
 * (`<meta http-equiv="Set-Cookie" ...>`, `document.cookie="sid=...; domain=..."`), and a
 * session identifier handed over as a parameter (`?PHPSESSID=...`, `;jsessionid=...`) by a
 * link from another site or with no referring page at all. Links inside a site that rewrites
 * URLs with its session id carry that site's own Referer and pass. Names that only look like
 * a session's (`sessionid`, `_rails_session`, `koa:sess`) count only on a link from another
 * site (CRS 943110) to a sign-in page, with a value that can be an identifier: analytics and
 * telemetry beacons carry `sid` and `sessionId` from every page of every site.
 */
import type { DetectorInput, EngineRequest, Finding, Input } from "./types.ts";
import { confidenceOf, makeFinding } from "./make_finding.ts";
import { locationOf } from "./extract_push.ts";

const META_SET_COOKIE = /<meta\b[^<>]*\bhttp-equiv\s*=\s*["']?\s*set-cookie\b/i;
/** Script that writes a cookie with a scope or lifetime (what a fixation needs). */
const SCRIPT_COOKIE = /\.cookie\s*=[^;\n]{0,200};\s*(?:expires|domain|path|max-age)\s*=/i;

/** Parameter names servers and frameworks read a session identifier from. */
const SESSION_PARAMS: ReadonlySet<string> = new Set([
  "jsessionid",
  "phpsessid",
  "aspsessionid",
  "asp.net_sessionid",
  "phpsession",
  "weblogicsession",
  "jservsession",
  "jwsession",
  "cfid",
  "cftoken",
  "cfsid",
]);

/** Any of {@link SESSION_PARAMS} in any case, or IIS's `ASPSESSIONIDxxxxxxxx`. */
const SESSION_NAME = new RegExp(
  `^(?:${[...SESSION_PARAMS].map((n) => n.replace(".", "\\.")).join("|")}|aspsessionid\\w*)$`,
  "i",
);

/**
 * Other frameworks' session names (`sessionid`, `session-id`, `_session_id`, Rails'
 * `_rails_session`, Rack's `rack.session`, CodeIgniter's `ci_session`, Koa's `koa:sess`,
 * NextAuth's `next-auth.session-token`, Meteor's `meteor_login_token`): a session segment
 * at the end of the name, or one of its own.
 */
const SESSION_LIKE =
  /(?:^|[^a-z])(?:sess(?:ion)?(?:[_.-]?(?:id|token|key))?|sid)$|(?:^|[^a-z])session(?:[^a-z]|$)|login_token$/i;
/** Paths of the pages that start a session: sign-in, authentication, session creation. */
const LOGIN_PATH =
  /(?:^|[/_.-])(?:log[_-]?in|log[_-]?on|sign[_-]?in|auth(?:enticate|orize)?|sso|sessions?)(?:$|[/_.?-])/i;
/** A value that can be an identifier: no spaces, a digit somewhere (`abc123`, `BAh7B0ki...`). */
const TOKEN = /^(?=[^\d]*\d)[\w%+/=.:-]{6,512}$/;

/**
 * Reports markup or script that sets a cookie.
 *
 * @param value the decoded input
 * @returns a `session-fixation` finding or undefined
 */
export function sessionFixation(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  if (text.indexOf("ookie") < 0 && text.indexOf("OOKIE") < 0) return undefined;
  const meta = META_SET_COOKIE.exec(text);
  if (meta !== null) {
    return makeFinding(value, "session-fixation", 92, "session.meta_set_cookie", text, meta.index);
  }
  const script = SCRIPT_COOKIE.exec(text);
  return script === null
    ? undefined
    : makeFinding(value, "session-fixation", 80, "session.script_cookie", text, script.index);
}

/**
 * Reports a session identifier passed as a query, form or path parameter when the request
 * comes from another site or from no page at all.
 *
 * @param req the request (for Host and Referer)
 * @param inputs its extracted inputs
 * @returns a `session-fixation` finding or undefined
 */
export function sessionParameter(
  req: EngineRequest,
  inputs: readonly Input[],
): Finding | undefined {
  let host: string | undefined;
  let referer = "";
  let param: Input | undefined;
  for (const input of inputs) {
    const s = input.source;
    if (s !== "query" && s !== "form" && s !== "path") continue;
    const name = s === "path" ? matrixName(input.name) : input.name;
    if (name === undefined) continue;
    if (SESSION_NAME.test(name)) {
      param = input;
      break;
    }
    if (s === "path" || !SESSION_LIKE.test(name) || !TOKEN.test(input.value)) continue;
    // A name that only looks like a session's counts when another site sent the link to the
    // page that signs in: analytics beacons carry `sid` and `sessionId` from every page.
    if (!LOGIN_PATH.test(req.path)) continue;
    if (host === undefined) [host, referer] = hostAndReferer(req);
    if (referer.length > 0 && refererHost(referer) !== host) {
      param = input;
      break;
    }
  }
  if (param === undefined) return undefined;
  if (host === undefined) [host, referer] = hostAndReferer(req);
  const sameSite = referer.length > 0 && host.length > 0 && refererHost(referer) === host;
  if (sameSite) return undefined;
  const score = 75;
  return {
    class: "session-fixation",
    confidence: confidenceOf(score),
    score,
    location: locationOf(param),
    evidence: param.value.slice(0, 120),
    ruleId: referer.length > 0 ? "session.offsite_parameter" : "session.parameter",
  };
}

function hostAndReferer(req: EngineRequest): [string, string] {
  let host = "";
  let referer = "";
  for (const [name, value] of req.headers) {
    if (name === "host") host = value.toLowerCase();
    else if (name === "referer") referer = value.toLowerCase();
  }
  return [host, referer];
}

/** `[2];jsessionid` -> `jsessionid`; undefined for anything but a matrix parameter. */
function matrixName(name: string): string | undefined {
  const semi = name.indexOf(";");
  return semi < 0 ? undefined : name.slice(semi + 1);
}

function refererHost(referer: string): string {
  const start = referer.indexOf("//");
  if (start < 0) return "";
  const rest = referer.slice(start + 2);
  const end = rest.search(HOST_END);
  return end < 0 ? rest : rest.slice(0, end);
}

const HOST_END = /[/?#]/;
