/**
 * Audits refused writes: a handler's successful change records itself inside its own
 * transaction; when it throws an AppError instead (validation, conflict, not found), this
 * records the failure with its code before the error reaches the client.
 */
import type { Audit } from "../../mod/core/audit.ts";
import { AppError } from "../../mod/core/errors.ts";
import { auditContext } from "./actor.ts";
import type { Ctx } from "./env.ts";

export interface AuditSink {
  readonly audit: Audit;
  readonly transaction: <T>(fn: () => T) => T;
}

/** The audit record's action and target for a refusal. */
export interface AuditedChange {
  readonly action: string;
  readonly target: string;
}

/** Runs `fn`; an AppError below 500 it throws is recorded as a failure of `change` first. */
export async function auditFailures<T>(
  c: Ctx,
  sink: AuditSink,
  { action, target }: AuditedChange,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError && err.status < 500) {
      const rules = err.details?.["rules"];
      sink.transaction(() =>
        sink.audit.record({
          ...auditContext(c),
          action,
          target,
          result: "failure",
          detail: { code: err.code, ...(Array.isArray(rules) ? { rules } : {}) },
        })
      );
    }
    throw err;
  }
}
