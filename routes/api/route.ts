/**
 * Route declarations: every management route states who may call it next to its handler, so
 * one inventory can be checked by tests and enforced by one guard.
 */
import type { Hono, MiddlewareHandler } from "hono";
import type { Ctx, Env } from "./env.ts";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * - `public`: anyone (health probes, setup status, login).
 * - `bootstrap`: first-install setup, guarded by the setup token instead of a session.
 * - `node`: cluster node-to-controller calls (specification 4.2): by default the node's verified
 *   client certificate (the guard's `node` hook); `credential: "join_token"` routes check the
 *   one-time join token in their handler instead (`POST /api/cluster/join`).
 * - `permission`: an authenticated principal holding `permission`. `sessionOnly` routes refuse
 *   API tokens (for example 2FA changes). `ownAccount` names a path parameter holding a user id:
 *   a signed-in user acting on their own account needs no permission (their own second factor).
 */
export type Access =
  | { readonly kind: "public" }
  | { readonly kind: "bootstrap" }
  | { readonly kind: "node"; readonly credential?: "join_token" }
  | {
    readonly kind: "permission";
    readonly permission: string;
    readonly sessionOnly?: boolean;
    readonly ownAccount?: string;
  };

export interface RouteDef {
  readonly method: Method;
  readonly path: string;
  readonly access: Access;
  readonly handler: (c: Ctx) => Response | Promise<Response>;
}

export const PUBLIC: Access = { kind: "public" };
export const BOOTSTRAP: Access = { kind: "bootstrap" };

/** Shorthand for a permission-guarded route. */
export function perm(
  permission: string,
  options: { sessionOnly?: boolean; ownAccount?: string } = {},
): Access {
  return { kind: "permission", permission, ...options };
}

/** Checks (and records the principal for) a route's access before its handler runs. */
export type Guard = (c: Ctx, access: Access) => Promise<void>;

/** Registers routes on the app, each behind the guard. */
export function mount(app: Hono<Env>, routes: readonly RouteDef[], guard: Guard): void {
  for (const route of routes) {
    const check: MiddlewareHandler<Env> = async (c, next) => {
      c.set("route", route.path);
      await guard(c, route.access);
      await next();
    };
    app.on(route.method, route.path, check, (c) => route.handler(c));
  }
}

/** Compiles Hono path patterns once (exact paths), for the 405 and 308 checks of unmatched requests. */
export function compilePatterns(routes: readonly RouteDef[]): ReadonlyArray<
  { re: RegExp; method: Method }
> {
  return routes.map((r) => ({
    method: r.method,
    re: new RegExp(
      "^" + r.path.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\/:[A-Za-z_]+/g, "/[^/]+") +
        "$",
    ),
  }));
}
