/**
 * Answers a flooding client's refused authentication late: a client past its refusal allowance
 * (`refusal_audit.ts`) waits before each refusal, so every connection it holds costs about one
 * request a second on the process it shares with the data plane. Successful answers are never
 * delayed.
 */
import { AppError } from "../../mod/core/errors.ts";
import type { RefusalAudit } from "../../mod/identity/refusal_audit.ts";
import type { Ctx } from "./env.ts";

export interface SlowRefusalDeps {
  readonly refusals: RefusalAudit;
  readonly sleep: (ms: number) => Promise<void>;
}

/** Runs `fn`; a refusal (4xx) of a flooding client is rethrown only after the delay. */
export async function slowRefusals<T>(
  c: Ctx,
  deps: SlowRefusalDeps,
  fn: () => T | Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError && err.status >= 400 && err.status < 500) {
      const ms = deps.refusals.slowdownMs(c.get("clientIp"));
      if (ms > 0) await deps.sleep(ms);
    }
    throw err;
  }
}
