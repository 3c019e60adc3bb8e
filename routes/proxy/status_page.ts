/**
 * The data plane's own status pages (HTML, or JSON for clients that prefer it), each carrying
 * the request's trace id: no site for the host (404), and the answers the transaction gives
 * when it cannot pass a request on. Until sites exist every request gets the no-site page,
 * never a management route.
 */
import { wantsJson } from "../../net/accept.ts";
import { DirectAnswer, ownHeaderPairs } from "../../net/direct_answer.ts";
import type { HeaderPairs } from "../../net/http1_head.ts";

export type DataHandler = (
  req: Request,
  info: Deno.ServeHandlerInfo,
) => Response | Promise<Response>;

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch]!);
}

/** A status page's fixed parts; each page is one such constant, built once. */
export interface PageText {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly message: string;
}

/**
 * A page as the data plane answers it: a {@link DirectAnswer} (its body bytes whole) for a
 * request of the own HTTP/1.1 server, which writes it without a `Response` or a body stream;
 * a `Response` for everyone else (`Deno.serve`, the TLS front, `app.request()` in tests).
 */
export type PageAnswer = Response | DirectAnswer;

/** The answer as a `Response`, for a caller that must have one (a Hono route, a preview). */
export function pageResponse(answer: PageAnswer): Response {
  return answer instanceof DirectAnswer ? answer.toResponse() : answer;
}

/** A page's HTML around its trace id: the part before it and the part after. */
function htmlAround(title: string, message: string): readonly [string, string] {
  return [
    `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>${
      escapeHtml(title)
    }</title>
<style>body{font-family:system-ui,sans-serif;background:#f5f6f8;color:#1f2933;display:flex;min-height:100vh;margin:0;align-items:center;justify-content:center}
main{background:#fff;border-radius:8px;padding:2rem 2.5rem;max-width:34rem;box-shadow:0 1px 4px rgba(0,0,0,.08)}
h1{font-size:1.4rem;margin:0 0 .75rem}code{background:#eef0f3;padding:.1rem .35rem;border-radius:4px}</style></head>
<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>
<p>traceId: <code>`,
    `</code></p></main></body></html>`,
  ];
}

/** The HTML halves of each constant page with its own message, built at its first use. */
const around = new WeakMap<PageText, readonly [string, string]>();
const utf8 = new TextEncoder();
const HTML_TYPE = "text/html; charset=utf-8";
const JSON_TYPE = "application/json; charset=utf-8";

/**
 * A small self-contained status page (or JSON) carrying the trace id.
 *
 * @param req the request, whose `Accept` chooses HTML or JSON
 * @param page the page's status, code, title and message
 * @param traceId the request's trace id
 * @param message a message of this request's own instead of the page's
 * @param extra further header fields (lower-case names), such as `retry-after`
 */
export function statusPage(
  req: Request,
  page: PageText,
  traceId: string,
  message: string = page.message,
  extra: HeaderPairs = [],
): PageAnswer {
  const { status, code, title } = page;
  const json = wantsJson(req);
  let body: string;
  if (json) body = JSON.stringify({ code, message, traceId });
  else {
    const own = message === page.message;
    let halves = own ? around.get(page) : undefined;
    if (halves === undefined) {
      halves = htmlAround(title, message);
      if (own) around.set(page, halves);
    }
    body = halves[0] + traceId + halves[1];
  }
  const type = json ? JSON_TYPE : HTML_TYPE;
  if (ownHeaderPairs(req) !== undefined) {
    const pairs: HeaderPairs = [
      ["cache-control", "no-store"],
      ["x-waf-trace-id", traceId],
      ["content-type", type],
      ...extra,
    ];
    return new DirectAnswer(status, "", pairs, utf8.encode(body));
  }
  const headers = new Headers({
    "cache-control": "no-store",
    "x-waf-trace-id": traceId,
    "content-type": type,
  });
  for (const [k, v] of extra) headers.set(k, v);
  return new Response(body, { status, headers });
}

const NO_SITE: PageText = {
  status: 404,
  code: "NO_SITE",
  title: "No site is configured for this host",
  message:
    "This address is protected by waf, but no site is configured for the requested host name.",
};
/** The 404 page for a host that no site serves. */
export function noSitePage(req: Request, traceId: string): PageAnswer {
  return statusPage(req, NO_SITE, traceId);
}

const PAYLOAD_TOO_LARGE: PageText = {
  status: 413,
  code: "PAYLOAD_TOO_LARGE",
  title: "Request body too large",
  message: "The request body is larger than this site accepts.",
};
/** 413: the body is over the site's limit (declared, or counted while streaming). */
export function tooLargePage(req: Request, traceId: string): PageAnswer {
  return statusPage(req, PAYLOAD_TOO_LARGE, traceId);
}

const BODY_UNREADABLE: PageText = {
  status: 400,
  code: "BODY_UNREADABLE",
  title: "The request body could not be read",
  message: "The request body ended early or was not framed correctly. Send the request again.",
};
/** 400: the client's body broke off or was framed wrongly. */
export function unreadableBodyPage(req: Request, traceId: string): PageAnswer {
  return statusPage(req, BODY_UNREADABLE, traceId);
}

const CHARSET_UNSUPPORTED: PageText = {
  status: 400,
  code: "CHARSET_UNSUPPORTED",
  title: "The request body's character set is not supported",
  message: "The body declares a character set that cannot be read. Send it as UTF-8.",
};
/** 400: the body declares a charset the engine cannot decode, so it cannot be judged. */
export function unsupportedCharsetPage(req: Request, traceId: string): PageAnswer {
  return statusPage(req, CHARSET_UNSUPPORTED, traceId);
}

const UPSTREAM_UNREACHABLE: PageText = {
  status: 502,
  code: "UPSTREAM_UNREACHABLE",
  title: "The site is unreachable",
  message: "The server behind this address could not be reached. Try again later.",
};
/** 502: no upstream of the site could be reached. */
export function badGatewayPage(req: Request, traceId: string): PageAnswer {
  return statusPage(req, UPSTREAM_UNREACHABLE, traceId);
}

const UPSTREAM_TIMEOUT: PageText = {
  status: 504,
  code: "UPSTREAM_TIMEOUT",
  title: "The site did not answer in time",
  message: "The server behind this address did not answer in time. Try again later.",
};
/** 504: the upstream did not answer within the site's response timeout. */
export function gatewayTimeoutPage(req: Request, traceId: string): PageAnswer {
  return statusPage(req, UPSTREAM_TIMEOUT, traceId);
}

const RATE_LIMITED: PageText = {
  status: 429,
  code: "RATE_LIMITED",
  title: "Too many requests",
  message: "This client sent too many requests. Wait a moment and try again.",
};
/** 429 with `Retry-After`: the client is over the global rate limit. */
export function rateLimitedPage(
  req: Request,
  traceId: string,
  retryAfterSeconds: number,
): PageAnswer {
  return statusPage(req, RATE_LIMITED, traceId, undefined, [
    ["retry-after", String(retryAfterSeconds)],
  ]);
}

const TOKEN_REQUIRED: PageText = {
  status: 401,
  code: "TOKEN_REQUIRED",
  title: "Authentication required",
  message: "This API needs a bearer token in the Authorization header.",
};
/** Its message names the reason: {@link unauthorizedPage} gives it per request. */
const TOKEN_INVALID: PageText = {
  status: 401,
  code: "TOKEN_INVALID",
  title: "Invalid token",
  message: "The bearer token was refused.",
};

/**
 * 401 with `WWW-Authenticate: Bearer` (RFC 6750): the route needs a valid token. A missing token
 * gets the bare challenge; a refused one `error="invalid_token"` and why.
 */
export function unauthorizedPage(req: Request, traceId: string, reason: string): PageAnswer {
  if (reason === "missing") {
    return statusPage(req, TOKEN_REQUIRED, traceId, undefined, [
      ["www-authenticate", 'Bearer realm="api"'],
    ]);
  }
  return statusPage(
    req,
    TOKEN_INVALID,
    traceId,
    `The bearer token was refused (${reason.replaceAll("_", " ")}).`,
    [[
      "www-authenticate",
      `Bearer realm="api", error="invalid_token", error_description="${reason}"`,
    ]],
  );
}

const INTERNAL: PageText = {
  status: 500,
  code: "INTERNAL",
  title: "Something went wrong",
  message: "The firewall could not handle this request. Quote the trace id when you report it.",
};
/** 500: the transaction itself failed (logged with the trace id). */
export function internalErrorPage(req: Request, traceId: string): PageAnswer {
  return statusPage(req, INTERNAL, traceId);
}
