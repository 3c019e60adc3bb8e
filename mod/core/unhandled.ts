/**
 * The server process's last line of defence against a promise rejection nobody handled (a bug,
 * typically in a side service's client such as the PostgreSQL access-log sink's): Deno ends the
 * process on one, and a WAF in front of a site must not go down because a side service failed.
 * `waf serve` installs this guard: the rejection is logged at error level (its name, message and
 * the first frame of its stack; never the value itself, which may hold request contents),
 * counted (`waf_unhandled_rejections_total`), and the process keeps serving. Tests do not
 * install it, so there an unhandled rejection still fails the test. See docs/reliability.md.
 */
import type { Logger } from "./logger.ts";

let count = 0;

/** Unhandled rejections caught by the guard since the process started. */
export function unhandledRejections(): number {
  return count;
}

/** A short, content-free description of a rejection's reason. */
export function describeRejection(reason: unknown): { error: string; at: string | undefined } {
  if (reason instanceof Error) {
    const at = reason.stack?.split("\n").map((l) => l.trim()).find((l) => l.startsWith("at "));
    return { error: `${reason.name}: ${reason.message}`.slice(0, 300), at };
  }
  return { error: `a non-Error value (${typeof reason})`, at: undefined };
}

/** Installs the guard; returns the function that removes it. */
export function guardUnhandledRejections(logger: Logger): () => void {
  const onRejection = (e: PromiseRejectionEvent) => {
    e.preventDefault();
    count++;
    logger.error("unhandled promise rejection (a bug): the process keeps serving", {
      ...describeRejection(e.reason),
      total: count,
    });
  };
  globalThis.addEventListener("unhandledrejection", onRejection);
  return () => globalThis.removeEventListener("unhandledrejection", onRejection);
}
