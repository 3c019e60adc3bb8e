// The one API client of the console: same-origin fetch with the session cookie, the CSRF
// double-submit (the waf_csrf cookie echoed in X-CSRF-Token) on every state-changing call, and
// the API's error object (code, message, trace id) carried by ApiError for the page to show.

/** A failed call: the API's error object, or a network failure (status 0). */
export class ApiError extends Error {
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "HTTP_" + status;
    this.traceId = error.trace_id || "";
    this.eventId = error.event_id || "";
  }
}

function csrfToken() {
  const m = /(?:^|;\s*)waf_csrf=([^;]+)/.exec(document.cookie);
  return m ? decodeURIComponent(m[1]) : "";
}

/** `path` plus the defined, non-empty values of `query`. */
export function withQuery(path, query = {}) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

/** Where a signed-out console goes (the sign-in page). */
export function toLogin() {
  globalThis.location.assign("/login");
}

/**
 * Calls the management API. Resolves with the parsed JSON body (`{}` for 204, the text for
 * HTML answers); rejects with ApiError. A 401 sends the browser to the sign-in page.
 */
export async function api(method, path, body) {
  const headers = { accept: "application/json" };
  if (method !== "GET") headers["x-csrf-token"] = csrfToken();
  if (body !== undefined) headers["content-type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, { code: "NETWORK", message: String(err.message || err) });
  }
  const type = response.headers.get("content-type") || "";
  const data = response.status === 204
    ? {}
    : type.includes("json")
    ? await response.json().catch(() => ({}))
    : await response.text();
  if (response.status === 401 && path !== "/api/auth/login") toLogin();
  if (!response.ok) {
    const error = (data && data.error) ||
      { trace_id: response.headers.get("x-waf-trace-id") || "" };
    throw new ApiError(response.status, error);
  }
  return data;
}

export const get = (path, query) => api("GET", withQuery(path, query));
export const post = (path, body) => api("POST", path, body);
export const put = (path, body) => api("PUT", path, body);
export const del = (path) => api("DELETE", path);
