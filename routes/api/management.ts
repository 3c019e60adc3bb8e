/**
 * The management-plane Hono app: request ids, security headers, the declared routes behind
 * one guard, and the error object for every failure (404, 405, 400, 413, 500). A GET or HEAD
 * of a route with a trailing slash (`/console/`, `/api/logs/`) is redirected (308) to the path
 * without it; other methods get a 404 that names the right path.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { AppError } from "../../mod/core/errors.ts";
import type { Logger } from "../../mod/core/logger.ts";
import { type Random, randomHex } from "../../mod/core/random.ts";
import type { Ctx, Env } from "./env.ts";
import { createOnError, errorResponse } from "./errors.ts";
import { compilePatterns, type Guard, mount, type RouteDef } from "./route.ts";

export interface ManagementAppDeps {
  readonly logger: Logger;
  readonly random: Random;
  readonly routes: readonly RouteDef[];
  readonly guard: Guard;
  /** Largest accepted request body in bytes. */
  readonly maxBodyBytes?: number;
  /** Sees every answered request (request metrics, `config.changed` events). */
  readonly observe?: (c: Ctx, status: number) => void;
  /**
   * Runs a state-changing request (the policy coalesces the rebuilds of a burst of writes and
   * answers each once its change is in force).
   */
  readonly write?: <T>(handle: () => Promise<T>) => Promise<T>;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
};

export function createManagementApp(deps: ManagementAppDeps): Hono<Env> {
  const app = new Hono<Env>();
  const patterns = compilePatterns(deps.routes);

  app.use("*", async (c, next) => {
    const traceId = randomHex(deps.random);
    c.set("traceId", traceId);
    c.set("eventId", randomHex(deps.random));
    c.set("clientIp", c.env?.remoteAddr?.hostname ?? "unknown");
    c.set("principal", undefined);
    c.set("route", undefined);
    if (deps.write && !SAFE_METHODS.has(c.req.method)) await deps.write(next);
    else await next();
    deps.observe?.(c, c.res.status);
    // A WebSocket handshake's answer cannot take headers.
    if (c.res.status === 101) return;
    c.header("x-waf-trace-id", traceId);
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.header(k, v);
  });

  app.use(
    "/api/*",
    bodyLimit({
      maxSize: deps.maxBodyBytes ?? 1024 * 1024,
      onError: (c) =>
        errorResponse(c, {
          status: 413,
          code: "PAYLOAD_TOO_LARGE",
          message: "Request body is larger than the limit",
        }),
    }),
  );

  mount(app, deps.routes, deps.guard);

  const methodsAt = (path: string) => [
    ...new Set(patterns.filter((p) => p.re.test(path)).map((p) => p.method)),
  ];

  app.notFound((c) => {
    const path = c.req.path;
    const bare = path.replace(/\/+$/, "");
    if (bare !== path && bare !== "") {
      // "/console/", "/api/logs/": the same endpoint without the slash. Only a known route is a
      // target, so "//evil.example/" cannot become an off-site redirect.
      const there = methodsAt(bare);
      if ((c.req.method === "GET" || c.req.method === "HEAD") && there.includes("GET")) {
        const query = new URL(c.req.url).search;
        return c.body(null, 308, { location: `${bare}${query}` });
      }
      if (there.length > 0) {
        return errorResponse(c, {
          status: 404,
          code: "NOT_FOUND",
          message:
            `No such endpoint: "${path}": the endpoint is "${bare}", without the trailing slash`,
        });
      }
    }
    const allowed = methodsAt(path);
    if (allowed.length > 0) {
      return errorResponse(c, {
        status: 405,
        code: "METHOD_NOT_ALLOWED",
        message: `Method ${c.req.method} is not allowed here: expected ${allowed.join(", ")}`,
      }, { allow: allowed.join(", ") });
    }
    return errorResponse(c, {
      status: 404,
      code: "NOT_FOUND",
      message: `No such endpoint: "${path}"`,
    });
  });
  app.onError(createOnError(deps.logger));
  return app;
}

/** A guard for builds without identity: only public routes answer. */
export const publicOnlyGuard: Guard = (_c, access) => {
  if (access.kind === "public") return Promise.resolve();
  return Promise.reject(new AppError(401, "UNAUTHORIZED", "Authentication required"));
};
