/**
 * The data plane as a Hono app, as the product's design has it (two Hono apps on separate
 * listeners, sharing the engine and the store): one catch-all route that runs the request's
 * {@link Transaction}. There is no per-request middleware: the order of checks lives in the
 * transaction, and Hono's single-handler path calls the route directly (what it costs is measured
 * by `bench:proxy`: docs/data-plane.md, "Design decisions").
 */
import { Hono } from "hono";
import type { Logger } from "../../mod/core/logger.ts";
import type { Random } from "../../mod/core/random.ts";
import { createTraceIds } from "../../mod/data_plane/trace_ids.ts";
import { createProxy, type Proxy, type ProxyDeps, type ProxyHandler } from "./proxy.ts";
import { internalErrorPage, pageResponse } from "./status_page.ts";

/** What the listener tells the app about the connection a request came on. */
export interface DataBindings {
  /** The TCP peer's address. */
  readonly peer: string;
  /** How the client reached the data plane. */
  readonly proto: "http" | "https";
  /**
   * The request itself, as `c.req.raw` gives it: the route reads it here, so Hono does not build
   * its request wrapper (three objects) for every proxied request.
   */
  readonly request: Request;
}

export interface DataApp {
  readonly app: Hono<{ Bindings: DataBindings }>;
  /** The app as a handler: what both data-plane listeners (HTTP and the TLS front) call. */
  readonly handle: ProxyHandler;
}

export function createDataApp(
  handle: ProxyHandler,
  logger: Logger,
  traceId: () => string,
): DataApp {
  // The one route takes every request: Hono is not asked to find the path in the URL (the
  // transaction splits the URL once itself), and every request's path reads as `/`, which the
  // router answers from its static table (a `*` route ran its pattern on every request).
  const app = new Hono<{ Bindings: DataBindings }>({ getPath: () => "/" });
  app.all("/", (c) => handle(c.env.request, c.env.peer, c.env.proto));
  // The transaction never throws; this only catches a failure before it started.
  app.onError((err, c) => {
    const id = traceId();
    logger.error("data plane request failed", { trace_id: id, error: err });
    return pageResponse(internalErrorPage(c.req.raw, id));
  });
  return {
    app,
    handle: (req, peer, proto) =>
      app.fetch(req, { peer, proto, request: req }) as Promise<Response>,
  };
}

/** The proxy and its Hono app on one policy (the main thread's, or a data-plane worker's). */
export function createProxyApp(
  deps: Omit<ProxyDeps, "traceId"> & { readonly random: Random },
): { readonly proxy: Proxy; readonly data: DataApp } {
  const traceId = createTraceIds(deps.random, deps.clock);
  const proxy = createProxy({ ...deps, traceId });
  return { proxy, data: createDataApp(proxy.handle, deps.logger, traceId) };
}
