/** API tokens and TOTP codes for tests against a WAF (in-process or listening). */
import { totpCode, totpSecretFromBase32, totpStep } from "../../mod/identity/totp.ts";
import type { Area } from "../../app/compose.ts";
import {
  ADMIN,
  type ApiTarget,
  callJson,
  completeSetup,
  createUser,
  login,
  type Session,
} from "./identity.ts";
import { createTestApp, type TestApp, type TestBase } from "./server.ts";

/** Config overrides that allow management API tokens. */
export const TOKENS_ON = { apisec: { management_api: { enabled: true } } } as const;

export interface Minted {
  readonly token: string;
  readonly item: Record<string, unknown> & { id: string };
}

/** Creates a token through the API as `by` (a session or a bearer token); throws unless 201. */
export async function mintToken(
  server: ApiTarget,
  by: Session | string,
  body: Record<string, unknown>,
): Promise<Minted> {
  const r = await callJson(server, "POST", "/api/system/api-tokens", as(by, body));
  if (r.status !== 201) throw new Error(`mint failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as unknown as Minted;
}

/** Call options for a session or a bearer token. */
export function as(by: Session | string, body?: unknown) {
  return typeof by === "string"
    ? { headers: { authorization: `Bearer ${by}` }, body }
    : { session: by, body };
}

/** One request with `Authorization: Bearer <token>` (no cookie, no CSRF header). */
export function withToken(
  server: ApiTarget,
  token: string,
  method: string,
  path: string,
  body?: unknown,
) {
  return callJson(server, method, path, as(token, body));
}

/** The code an authenticator bound to `base32` shows at the server's clock (± steps). */
export function codeAt(server: Pick<TestBase, "clock">, base32: string, steps = 0): string {
  return totpCode(totpSecretFromBase32(base32), totpStep(server.clock.now()) + steps);
}

/**
 * Turns 2FA on for `user` through the API as its owner (setup, then a code of the server's
 * clock); throws unless it is on. Returns the base32 secret.
 */
export async function enableTwoFactor(
  server: ApiTarget & Pick<TestBase, "clock">,
  user: { username: string; password: string },
  id: string,
): Promise<string> {
  const session = await login(server, user.username, user.password);
  const setup = await callJson(server, "POST", `/api/users/${id}/2fa/setup`, { session, body: {} });
  const secret = setup.body.secret as string;
  const on = await callJson(server, "POST", `/api/users/${id}/2fa/enable`, {
    session,
    body: { code: codeAt(server, secret) },
  });
  if (on.status !== 200) throw new Error(`2FA enable: ${on.status} ${JSON.stringify(on.body)}`);
  return secret;
}

/** The error code of a JSON error response. */
export const errorCode = (r: { body: Record<string, unknown> }) =>
  (r.body.error as { code?: string } | undefined)?.code;

export const VIEWER = { username: "viewer", password: "Glacier-Moth-42" } as const;

/** An in-process WAF after setup, with the admin and a `readonly` viewer signed in. */
export interface AdminAndViewer<A extends Area> {
  readonly server: TestApp<A>;
  readonly admin: Session;
  readonly viewer: Session;
  readonly viewerId: string;
}

/**
 * An in-process WAF (with `config`, of `areas` or every area) after setup, with the admin and a
 * `readonly` viewer signed in: route tests where a real socket is not the point.
 */
export function adminAndViewer(config?: Record<string, unknown>): Promise<AdminAndViewer<Area>>;
export function adminAndViewer<A extends Area>(
  config: Record<string, unknown>,
  areas: readonly A[],
): Promise<AdminAndViewer<A>>;
export async function adminAndViewer(
  config: Record<string, unknown> = {},
  areas?: readonly Area[],
): Promise<AdminAndViewer<never>> {
  const server = areas ? await createTestApp({ config, areas }) : await createTestApp({ config });
  await completeSetup(server);
  const viewerId = await createUser(server, VIEWER.username, VIEWER.password, "readonly");
  return {
    server,
    admin: await login(server, ADMIN.username, ADMIN.password),
    viewer: await login(server, VIEWER.username, VIEWER.password),
    viewerId,
  };
}

export interface AuditItem {
  readonly action: string;
  readonly result: string;
  readonly target: string | null;
  readonly actor: Record<string, unknown>;
  readonly detail: Record<string, unknown>;
}

/** `GET /api/audit?<query>` as `session`, newest first. */
export async function auditItems(
  server: ApiTarget,
  session: Session,
  query: string,
): Promise<AuditItem[]> {
  const r = await callJson(server, "GET", `/api/audit?${query}`, { session });
  if (r.status !== 200) throw new Error(`audit: ${r.status}`);
  return r.body.items as AuditItem[];
}

/** The kinds of the notifications `session` can read, newest first. */
export async function notificationKinds(server: ApiTarget, session: Session): Promise<string[]> {
  const r = await callJson(server, "GET", "/api/notifications", { session });
  if (r.status !== 200) throw new Error(`notifications: ${r.status}`);
  return (r.body.items as { kind: string }[]).map((n) => n.kind);
}

/** An in-process WAF of the API-access area (tokens on) after setup, the admin signed in. */
export async function signedInAdmin(): Promise<{
  server: TestBase;
  admin: Session;
  adminId: string;
}> {
  const server = await createTestApp({ config: TOKENS_ON, areas: ["apiAccess"] });
  await completeSetup(server);
  const admin = await login(server, ADMIN.username, ADMIN.password);
  const me = await callJson(server, "GET", "/api/auth/session", { session: admin });
  return { server, admin, adminId: (me.body.user as { id: string }).id };
}
