/**
 * Maps failures to the one error object: `{"error": {code, message, trace_id, event_id}}` with
 * `X-WAF-Trace-Id` / `X-WAF-Event-Id` headers. Unexpected errors become a generic 500 whose
 * stack goes to the log under the same ids, never to the client.
 */
import { AppError } from "../../mod/core/errors.ts";
import type { Logger } from "../../mod/core/logger.ts";
import type { Ctx } from "./env.ts";

/** What an error response says (an `AppError` is one). */
export interface ErrorAnswer {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  /** Extra public fields of the error object. */
  readonly details?: Readonly<Record<string, unknown>>;
}

/** Builds the JSON error response for `c`. */
export function errorResponse(
  c: Ctx,
  { status, code, message, details }: ErrorAnswer,
  headers?: Record<string, string>,
): Response {
  const traceId = c.get("traceId");
  const eventId = c.get("eventId");
  return new Response(
    JSON.stringify({ error: { code, message, trace_id: traceId, event_id: eventId, ...details } }),
    {
      status,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "cache-control": "no-store",
        "x-waf-trace-id": traceId,
        "x-waf-event-id": eventId,
        ...headers,
      },
    },
  );
}

/** True when `err`, or an error it wraps, is the management database being unreachable. */
function storeUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === "StoreUnavailableError") return true;
  }
  return false;
}

/** Seconds a client waits before retrying while the management database is unreachable. */
const STORE_RETRY_AFTER_S = 5;

/** Hono `onError` handler. */
export function createOnError(logger: Logger) {
  return (err: unknown, c: Ctx): Response => {
    if (storeUnavailable(err)) {
      // Nothing was written (the change and its audit record share one transaction): the
      // client may send it again once the database answers.
      logger.warn("management request refused: the management database is unavailable", {
        trace_id: c.get("traceId"),
        event_id: c.get("eventId"),
        method: c.req.method,
        path: c.req.path,
      });
      return errorResponse(c, {
        status: 503,
        code: "STORE_UNAVAILABLE",
        message:
          "The management database is unavailable; nothing was changed. Retry when it is back (the data planes keep enforcing the last policy).",
      }, { "retry-after": String(STORE_RETRY_AFTER_S) });
    }
    if (err instanceof AppError) {
      // 501 is a deliberate answer (a feature this build does not have), not a failure to log.
      if (err.status >= 500 && err.status !== 501) {
        logger.error("request failed", {
          trace_id: c.get("traceId"),
          event_id: c.get("eventId"),
          code: err.code,
          error: err,
          cause: err.cause instanceof Error ? err.cause : undefined,
        });
      }
      const headers: Record<string, string> = {};
      const retry = err.details?.["retry_after"];
      if (typeof retry === "number") headers["retry-after"] = String(Math.ceil(retry));
      return errorResponse(c, err, headers);
    }
    logger.error("unexpected error", {
      trace_id: c.get("traceId"),
      event_id: c.get("eventId"),
      method: c.req.method,
      path: c.req.path,
      error: err instanceof Error ? err : String(err),
    });
    return errorResponse(c, {
      status: 500,
      code: "INTERNAL",
      message: "Internal error: see the server log for this event id",
    });
  };
}
