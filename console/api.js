// The one API client of the console: same-origin fetch with the session cookie, the CSRF
// double-submit (the waf_csrf cookie echoed in X-CSRF-Token) on every state-changing call, and
// the API's error object (code, message, trace id) carried by ApiError for the page to show.

/**
 * A failed call: the API's error object, or a network failure (status 0). A refused field
 * carries `field` (the first) and `problems` (every one: `{field, message, code, ...}`).
 */
export class ApiError extends Error {
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "HTTP_" + status;
    this.traceId = error.trace_id || "";
    this.eventId = error.event_id || "";
    this.field = error.field || "";
    this.problems = Array.isArray(error.problems) ? error.problems : [];
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

/** The session-storage key of why the console sent the browser to the sign-in page. */
const SIGN_IN_REASON = "waf.sign_in_reason";

/**
 * Where a signed-out console goes: the sign-in page, told (`?next=`) to come back to the page
 * that was open, unless `back` is false (signing out). `reason` says why the session ended when
 * the console knows (`2fa_on`, `2fa_off`, `password_changed`): kept in this tab's session storage
 * for login.js to word once, so no link can make the sign-in page say it.
 */
export function toLogin(back = true, reason) {
  const { pathname, search, hash } = globalThis.location;
  const here = pathname + search + hash;
  const next = back && /^\/console\/./.test(here) ? `?next=${encodeURIComponent(here)}` : "";
  if (reason) sessionStorage.setItem(SIGN_IN_REASON, reason);
  globalThis.location.assign("/login" + next);
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

/**
 * POSTs `body` and reads a Server-Sent Events answer, calling `onEvent(type, data)` for each
 * event as it arrives. An error answer (before the stream starts) rejects with ApiError.
 */
export async function postEvents(path, body, onEvent, signal) {
  let response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: {
        accept: "text/event-stream",
        "content-type": "application/json",
        "x-csrf-token": csrfToken(),
      },
      credentials: "same-origin",
      body: JSON.stringify(body),
      signal,
    });
  } catch (err) {
    throw new ApiError(0, { code: "NETWORK", message: String(err.message || err) });
  }
  if (response.status === 401) toLogin();
  if (!response.ok || !response.body) {
    const data = await response.json().catch(() => ({}));
    throw new ApiError(response.status, data.error || {});
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) type = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length > 0) onEvent(type, JSON.parse(data.join("\n")));
    }
  }
}
