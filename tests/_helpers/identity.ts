/** Setup, login and authenticated calls against a test WAF, in-process or listening (cookies by hand). */
import "./fast_hash.ts";
import type { TestBase } from "./server.ts";
import { OPERATOR } from "../../mod/identity/account_authority.ts";
import { REFUSAL_LIMITS } from "../../mod/identity/refusal_audit.ts";

/** What the HTTP helpers need: the data directory and a way to call the management plane. */
export type ApiTarget = Pick<TestBase, "dir" | "api">;

export const ADMIN = { username: "admin", password: "Correct-Horse-9" } as const;

/**
 * Moves the test server's clock to `offsetMs` into the next refused-authentication audit window.
 * The windows are aligned (5 minutes) and the fake clock starts at the wall clock, so a test that
 * moves the clock and expects one aggregated record must place itself in a window first, or it
 * fails whenever it happens to run shortly before a window's end.
 */
export function enterRefusalWindow(server: Pick<TestBase, "clock">, offsetMs = 1000): void {
  const window = REFUSAL_LIMITS.windowMs;
  server.clock.advance(window - (server.clock.now() % window) + offsetMs);
}

export interface Session {
  readonly cookie: string;
  readonly csrf: string;
  readonly sessionId: string;
}

export interface SetCookie {
  readonly value: string;
  /** Lower-cased attribute names → values ("" for flags such as HttpOnly). */
  readonly attrs: Readonly<Record<string, string>>;
}

/** The Set-Cookie headers of a response, by cookie name. */
export function setCookies(res: Response): Map<string, SetCookie> {
  const out = new Map<string, SetCookie>();
  for (const line of res.headers.getSetCookie()) {
    const [pair, ...rest] = line.split(";").map((p) => p.trim());
    const eq = pair!.indexOf("=");
    const attrs: Record<string, string> = {};
    for (const a of rest) {
      const i = a.indexOf("=");
      attrs[(i < 0 ? a : a.slice(0, i)).toLowerCase()] = i < 0 ? "" : a.slice(i + 1);
    }
    out.set(pair!.slice(0, eq), { value: pair!.slice(eq + 1), attrs });
  }
  return out;
}

/** The token inside `<data-dir>/runtime/setup.url`. */
export async function setupToken(server: ApiTarget): Promise<string> {
  const text = await Deno.readTextFile(`${server.dir}/runtime/setup.url`);
  return /#token=([A-Za-z0-9_-]+)/.exec(text)![1]!;
}

export interface CallOptions {
  readonly session?: Session;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** Send this CSRF header instead of the session's; `false` sends none. */
  readonly csrf?: string | false;
}

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** One request to the management API. */
export async function call(
  server: ApiTarget,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.session) {
    headers["cookie"] = [options.session.cookie, headers["cookie"]].filter(Boolean).join("; ");
    if (UNSAFE.has(method) && options.csrf !== false) {
      headers["x-csrf-token"] = options.csrf ?? options.session.csrf;
    }
  }
  return await server.api(path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
}

/** Calls and parses the JSON body (the body is always consumed; a non-JSON one is cancelled). */
export async function callJson(
  server: ApiTarget,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<{ status: number; body: Record<string, unknown>; res: Response }> {
  const res = await call(server, method, path, options);
  // A body that is not JSON (the Prometheus text, an event stream that never ends) is not read.
  if (!/json/.test(res.headers.get("content-type") ?? "json")) {
    await res.body?.cancel();
    return { status: res.status, body: {}, res };
  }
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {}, res };
}

/** Completes first-install setup through the API with the token from setup.url. */
export async function completeSetup(
  server: ApiTarget,
  user: { username: string; password: string } = ADMIN,
): Promise<void> {
  const token = await setupToken(server);
  const r = await call(server, "POST", "/api/setup", {
    headers: { "x-waf-setup-token": token },
    body: user,
  });
  if (r.status !== 201) throw new Error(`setup failed: ${r.status} ${await r.text()}`);
  await r.body?.cancel();
}

/** Logs in and returns the cookies to send back. */
export async function login(
  server: ApiTarget,
  username: string,
  password: string,
  extra: Record<string, unknown> = {},
): Promise<Session> {
  const res = await call(server, "POST", "/api/auth/login", {
    body: { username, password, ...extra },
  });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${await res.text()}`);
  await res.body?.cancel();
  const cookies = setCookies(res);
  const sessionId = cookies.get("waf_session")!.value;
  const csrf = cookies.get("waf_csrf")!.value;
  return { cookie: `waf_session=${sessionId}; waf_csrf=${csrf}`, csrf, sessionId };
}

/** Creates an account directly through the users service (no HTTP, audited as the CLI). */
export async function createUser(
  server: TestBase,
  username: string,
  password: string,
  role: string,
): Promise<string> {
  const user = await server.identity.users.create({ username, password, role }, {
    actor: { type: "cli", name: "test" },
    caller: OPERATOR,
  });
  return user.id;
}
