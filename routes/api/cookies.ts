/**
 * The console's cookies. The session and setup cookies are HttpOnly; the CSRF cookie is
 * readable by the console's script (that is the point of a double-submit cookie). All are
 * SameSite=Strict, Path=/, and Secure when the management listener has TLS.
 */
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Ctx } from "./env.ts";

export const SESSION_COOKIE = "waf_session";
export const CSRF_COOKIE = "waf_csrf";
export const SETUP_COOKIE = "waf_setup";
export const CSRF_HEADER = "x-csrf-token";
export const SETUP_TOKEN_HEADER = "x-waf-setup-token";

function base(c: Ctx) {
  return { path: "/", sameSite: "Strict" as const, secure: c.env?.tls === true };
}

export function readCookie(c: Ctx, name: string): string | undefined {
  return getCookie(c, name);
}

export function setSessionCookies(
  c: Ctx,
  session: { id: string; csrf: string; maxAgeSeconds: number },
): void {
  setCookie(c, SESSION_COOKIE, session.id, {
    ...base(c),
    httpOnly: true,
    maxAge: session.maxAgeSeconds,
  });
  setCookie(c, CSRF_COOKIE, session.csrf, { ...base(c), maxAge: session.maxAgeSeconds });
}

export function clearSessionCookies(c: Ctx): void {
  deleteCookie(c, SESSION_COOKIE, { ...base(c), httpOnly: true });
  deleteCookie(c, CSRF_COOKIE, base(c));
}

export function setSetupCookie(c: Ctx, value: string, maxAgeSeconds: number): void {
  setCookie(c, SETUP_COOKIE, value, { ...base(c), httpOnly: true, maxAge: maxAgeSeconds });
}

export function clearSetupCookie(c: Ctx): void {
  deleteCookie(c, SETUP_COOKIE, { ...base(c), httpOnly: true });
}
