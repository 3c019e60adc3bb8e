/**
 * The data plane's own status pages (HTML, or JSON for clients that prefer it), each carrying
 * the request's trace id: no site for the host (404), and the answers the transaction gives
 * when it cannot pass a request on. Until sites exist every request gets the no-site page,
 * never a management route.
 */
import { wantsJson } from "../../net/accept.ts";

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

/** A small self-contained status page (or JSON) carrying the trace id. */
export function statusPage(
  req: Request,
  status: number,
  code: string,
  title: string,
  message: string,
  traceId: string,
): Response {
  const headers = {
    "cache-control": "no-store",
    "x-waf-trace-id": traceId,
    "content-type": "",
  };
  if (wantsJson(req)) {
    headers["content-type"] = "application/json; charset=utf-8";
    return new Response(JSON.stringify({ code, message, traceId }), { status, headers });
  }
  headers["content-type"] = "text/html; charset=utf-8";
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>${
    escapeHtml(title)
  }</title>
<style>body{font-family:system-ui,sans-serif;background:#f5f6f8;color:#1f2933;display:flex;min-height:100vh;margin:0;align-items:center;justify-content:center}
main{background:#fff;border-radius:8px;padding:2rem 2.5rem;max-width:34rem;box-shadow:0 1px 4px rgba(0,0,0,.08)}
h1{font-size:1.4rem;margin:0 0 .75rem}code{background:#eef0f3;padding:.1rem .35rem;border-radius:4px}</style></head>
<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>
<p>traceId: <code>${traceId}</code></p></main></body></html>`;
  return new Response(body, { status, headers });
}

/** The 404 page for a host that no site serves. */
export function noSitePage(req: Request, traceId: string): Response {
  return statusPage(
    req,
    404,
    "NO_SITE",
    "No site is configured for this host",
    "This address is protected by waf, but no site is configured for the requested host name.",
    traceId,
  );
}

/** 413: the body is over the site's limit (declared, or counted while streaming). */
export function tooLargePage(req: Request, traceId: string): Response {
  return statusPage(
    req,
    413,
    "PAYLOAD_TOO_LARGE",
    "Request body too large",
    "The request body is larger than this site accepts.",
    traceId,
  );
}

/** 400: the client's body broke off or was framed wrongly. */
export function unreadableBodyPage(req: Request, traceId: string): Response {
  return statusPage(
    req,
    400,
    "BODY_UNREADABLE",
    "The request body could not be read",
    "The request body ended early or was not framed correctly. Send the request again.",
    traceId,
  );
}

/** 502: no upstream of the site could be reached. */
export function badGatewayPage(req: Request, traceId: string): Response {
  return statusPage(
    req,
    502,
    "UPSTREAM_UNREACHABLE",
    "The site is unreachable",
    "The server behind this address could not be reached. Try again later.",
    traceId,
  );
}

/** 504: the upstream did not answer within the site's response timeout. */
export function gatewayTimeoutPage(req: Request, traceId: string): Response {
  return statusPage(
    req,
    504,
    "UPSTREAM_TIMEOUT",
    "The site did not answer in time",
    "The server behind this address did not answer in time. Try again later.",
    traceId,
  );
}

/** 429 with `Retry-After`: the client is over the global rate limit. */
export function rateLimitedPage(req: Request, traceId: string, retryAfterSeconds: number) {
  const res = statusPage(
    req,
    429,
    "RATE_LIMITED",
    "Too many requests",
    "This client sent too many requests. Wait a moment and try again.",
    traceId,
  );
  res.headers.set("retry-after", String(retryAfterSeconds));
  return res;
}

/**
 * 401 with `WWW-Authenticate: Bearer` (RFC 6750): the route needs a valid token. A missing token
 * gets the bare challenge; a refused one `error="invalid_token"` and why.
 */
export function unauthorizedPage(req: Request, traceId: string, reason: string): Response {
  const missing = reason === "missing";
  const res = statusPage(
    req,
    401,
    missing ? "TOKEN_REQUIRED" : "TOKEN_INVALID",
    missing ? "Authentication required" : "Invalid token",
    missing
      ? "This API needs a bearer token in the Authorization header."
      : `The bearer token was refused (${reason.replaceAll("_", " ")}).`,
    traceId,
  );
  res.headers.set(
    "www-authenticate",
    missing
      ? 'Bearer realm="api"'
      : `Bearer realm="api", error="invalid_token", error_description="${reason}"`,
  );
  return res;
}

/** 500: the transaction itself failed (logged with the trace id). */
export function internalErrorPage(req: Request, traceId: string): Response {
  return statusPage(
    req,
    500,
    "INTERNAL",
    "Something went wrong",
    "The firewall could not handle this request. Quote the trace id when you report it.",
    traceId,
  );
}
