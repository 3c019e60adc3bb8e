/**
 * The audit trail: who did what to which target, with what result. Callers record inside the
 * same store transaction as the change they audit (see `db/store.ts` `transaction`).
 */
import type { AuditFilter, AuditRepo, AuditRow, NewAuditRow } from "../../db/audit_repo.ts";
import type { Clock } from "./clock.ts";

/** Who acted: a user, an API token, the local CLI, the system itself, or nobody yet. */
export interface Actor {
  readonly type: "user" | "token" | "cli" | "system" | "anonymous";
  readonly id?: string;
  readonly name?: string;
}

export interface AuditEvent {
  readonly actor: Actor;
  /** Dotted verb, e.g. `user.create`, `auth.login`, `site.update`. */
  readonly action: string;
  readonly target?: string;
  readonly result: "success" | "failure" | "denied";
  readonly clientIp?: string;
  readonly traceId?: string;
  /** Extra facts; never secrets. */
  readonly detail?: Record<string, unknown>;
}

export interface AuditRecord {
  readonly id: number;
  readonly time: string;
  readonly actor: { type: string; id: string | null; name: string | null };
  readonly action: string;
  readonly target: string | null;
  readonly result: string;
  readonly client_ip: string | null;
  readonly trace_id: string | null;
  readonly detail: unknown;
  /** How many events the record stands for: 1, or more for aggregated authentication failures. */
  readonly count: number;
}

function toRecord(row: AuditRow): AuditRecord {
  return {
    id: row.id,
    time: new Date(row.time).toISOString(),
    actor: { type: row.actor_type, id: row.actor_id, name: row.actor_name },
    action: row.action,
    target: row.target,
    result: row.result,
    client_ip: row.client_ip,
    trace_id: row.trace_id,
    detail: row.detail ? JSON.parse(row.detail) : null,
    count: row.count,
  };
}

function toRow(now: number, event: AuditEvent): NewAuditRow {
  return {
    time: now,
    actor_type: event.actor.type,
    actor_id: event.actor.id ?? null,
    actor_name: event.actor.name ?? null,
    action: event.action,
    target: event.target ?? null,
    result: event.result,
    client_ip: event.clientIp ?? null,
    trace_id: event.traceId ?? null,
    detail: event.detail ? JSON.stringify(event.detail) : null,
  };
}

export function createAudit(deps: { repo: AuditRepo; clock: Clock }) {
  return {
    /** Appends one record; call inside the change's transaction. */
    record(event: AuditEvent): number {
      return deps.repo.insert(toRow(deps.clock.now(), event));
    },
    /**
     * Starts an aggregated authentication-failure record (see `mod/identity/refusal_audit.ts`):
     * unlike every other record its count and detail may grow, and retention deletes it.
     */
    recordAggregate(event: AuditEvent, time: number, count: number): number {
      return deps.repo.insertAggregate(toRow(time, event), count);
    },
    /** Brings an aggregated record up to date. */
    updateAggregate(
      id: number,
      count: number,
      detail: Record<string, unknown>,
      traceId: string | undefined,
    ): void {
      deps.repo.updateAggregate(id, count, JSON.stringify(detail), traceId ?? null);
    },
    /** Deletes aggregated authentication failures older than `before`, in bounded batches. */
    purgeAuthFailures(before: number): number {
      let total = 0;
      for (let n = -1; n !== 0;) {
        n = deps.repo.purgeAuthFailures(before, 1000);
        total += n;
      }
      return total;
    },
    /** Newest first; `next_cursor` is the id to pass as `beforeId` for the next page. */
    list(filter: AuditFilter): { items: AuditRecord[]; next_cursor: string | null } {
      const rows = deps.repo.list({ ...filter, limit: filter.limit + 1 });
      const page = rows.slice(0, filter.limit);
      const more = rows.length > filter.limit;
      return {
        items: page.map(toRecord),
        next_cursor: more && page.length ? String(page[page.length - 1]!.id) : null,
      };
    },
  };
}

export type Audit = ReturnType<typeof createAudit>;
