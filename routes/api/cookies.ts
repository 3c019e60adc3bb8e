/**
 * The console's cookies. The session and setup cookies are HttpOnly; the CSRF cookie is
 * readable by the console's script (that is the point of a double-submit cookie). All are
 * SameSite=Strict, Path=/, and Secure whenever the browser reaches the console over TLS: the
 * management listener runs TLS (`tls: auto` or `cert_file`), or `server.management.base_url` is
 * an `https://` address (a TLS-terminating proxy in front of a plain listener). `X-Forwarded-Proto`
 * is not consulted: the management plane trusts no proxy's headers.
 */
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Ctx } from "./env.ts";

export const SESSION_COOKIE = "waf_session";
export const CSRF_COOKIE = "waf_csrf";
export const SETUP_COOKIE = "waf_setup";
export const CSRF_HEADER = "x-csrf-token";
export const SETUP_TOKEN_HEADER = "x-waf-setup-token";

export function readCookie(c: Ctx, name: string): string | undefined {
  return getCookie(c, name);
}

/** Sets and clears the console's cookies (what `createConsoleCookies` returns). */
export interface ConsoleCookies {
  setSession(c: Ctx, session: { id: string; csrf: string; maxAgeSeconds: number }): void;
  clearSession(c: Ctx): void;
  setSetup(c: Ctx, value: string, maxAgeSeconds: number): void;
  clearSetup(c: Ctx): void;
}

/** True when `baseUrl` (the console's public address) is an `https://` one. */
export function isHttpsBaseUrl(baseUrl: string | undefined): boolean {
  if (baseUrl === undefined) return false;
  try {
    return new URL(baseUrl).protocol === "https:";
  } catch {
    return false;
  }
}

/**
 * The console's cookies; `httpsBaseUrl`: the console is published at an `https://` address, so
 * the cookies are Secure even on a plain listener behind the proxy that terminates TLS.
 */
export function createConsoleCookies(options: { readonly httpsBaseUrl: boolean }): ConsoleCookies {
  const base = (c: Ctx) => ({
    path: "/",
    sameSite: "Strict" as const,
    secure: options.httpsBaseUrl || c.env?.tls === true,
  });
  return {
    setSession(c, session) {
      setCookie(c, SESSION_COOKIE, session.id, {
        ...base(c),
        httpOnly: true,
        maxAge: session.maxAgeSeconds,
      });
      setCookie(c, CSRF_COOKIE, session.csrf, { ...base(c), maxAge: session.maxAgeSeconds });
    },
    clearSession(c) {
      deleteCookie(c, SESSION_COOKIE, { ...base(c), httpOnly: true });
      deleteCookie(c, CSRF_COOKIE, base(c));
    },
    setSetup(c, value, maxAgeSeconds) {
      setCookie(c, SETUP_COOKIE, value, { ...base(c), httpOnly: true, maxAge: maxAgeSeconds });
    },
    clearSetup(c) {
      deleteCookie(c, SETUP_COOKIE, { ...base(c), httpOnly: true });
    },
  };
}
