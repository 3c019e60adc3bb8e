/**
 * Approval requests for high-risk tool calls. A request holds the exact change; a user with
 * `approve:ai` who also holds the permission the change needs, and who is not the requester,
 * approves it, and the change is applied through the API's own service under the approver's
 * name, with an `ai.approval.approve` record naming both users. Decisions are compare-and-set
 * on the status, so two approvers racing cannot apply a change twice.
 */
import type {
  AiApprovalRow,
  AiApprovalsRepo,
  AiApprovalStatus,
} from "../../db/ai_approvals_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import { type Random, randomHex } from "../core/random.ts";
import { grants } from "../identity/permissions.ts";
import type { AppliedChange, PlannedChange } from "./change_tools.ts";
import type { Asker } from "./tools.ts";

type RequestFacts = Pick<AuditEvent, "clientIp" | "traceId">;
type ActorContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

export interface ApprovalView {
  readonly id: string;
  readonly status: AiApprovalStatus;
  readonly tool: string;
  readonly permission: string;
  readonly summary: string;
  readonly change: unknown;
  readonly conversation_id: string | null;
  readonly requested_by: { readonly id: string; readonly name: string };
  readonly requested_at: string;
  readonly decided_by: { readonly id: string; readonly name: string } | null;
  readonly decided_at: string | null;
  readonly result: unknown;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function approvalView(row: AiApprovalRow): ApprovalView {
  return {
    id: row.id,
    status: row.status,
    tool: row.tool,
    permission: row.permission,
    summary: row.summary,
    change: JSON.parse(row.change),
    conversation_id: row.conversation_id,
    requested_by: { id: row.requested_by, name: row.requested_by_name },
    requested_at: iso(row.requested_at)!,
    decided_by: row.decided_by === null
      ? null
      : { id: row.decided_by, name: row.decided_by_name ?? row.decided_by },
    decided_at: iso(row.decided_at),
    result: row.result === null ? null : JSON.parse(row.result),
  };
}

export interface ApprovalsDeps {
  readonly repo: AiApprovalsRepo;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly random: Random;
  readonly transaction: <T>(fn: () => T) => T;
  /** Applies an approved change through the API's service. */
  readonly apply: (
    tool: string,
    change: Record<string, unknown>,
    ctx: ActorContext,
  ) => Promise<AppliedChange>;
  /** Told after a request is created or decided (the realtime feed, the approvers' inbox). */
  readonly changed?: (approval: ApprovalView) => void;
}

const actorOf = (a: Asker) => {
  const [type, id] = a.key.split(":", 2) as ["user" | "token", string];
  return { type, id, name: a.name };
};

/** A high-risk tool call to hold for approval: who asked, in which conversation, for what. */
export interface ApprovalRequest {
  readonly asker: Asker;
  readonly conversationId: string | null;
  readonly tool: string;
  /** The permission the change needs (its approver must hold it too). */
  readonly permission: string;
  readonly planned: PlannedChange;
  readonly facts: RequestFacts;
}

/** Approval requests of the AI assistant (what `createApprovals` returns). */
export interface Approvals {
  /** Records a pending request for `planned`; nothing changes until it is approved. */
  request(r: ApprovalRequest): ApprovalView;
  /** The requests, newest first, optionally of one status. */
  list(status: AiApprovalStatus | undefined, limit: number): ApprovalView[];
  /** One request; 404 `NOT_FOUND` when there is none with this id. */
  get(id: string): ApprovalView;
  /**
   * Approves a pending request and applies its change under the approver's name: not the
   * requester, and holding the permission the change needs (403 otherwise, audited).
   */
  approve(id: string, by: Asker, facts: RequestFacts): Promise<ApprovalView>;
  /** Rejects a pending request; nothing changes. */
  reject(id: string, by: Asker, reason: string | undefined, facts: RequestFacts): ApprovalView;
}

class ApprovalsService implements Approvals {
  readonly #deps: ApprovalsDeps;

  constructor(deps: ApprovalsDeps) {
    this.#deps = deps;
  }

  request(r: ApprovalRequest): ApprovalView {
    const { repo, audit, clock } = this.#deps;
    const id = `apr_${randomHex(this.#deps.random, 8)}`;
    this.#deps.transaction(() => {
      repo.insert({
        id,
        conversation_id: r.conversationId,
        tool: r.tool,
        permission: r.permission,
        summary: r.planned.summary,
        change: JSON.stringify(r.planned.change),
        requested_by: r.asker.key,
        requested_by_human: r.asker.human,
        requested_by_name: r.asker.name,
        requested_at: clock.now(),
      });
      audit.record({
        ...r.facts,
        actor: actorOf(r.asker),
        action: "ai.approval.request",
        target: id,
        result: "success",
        detail: { tool: r.tool, summary: r.planned.summary, change: r.planned.change },
      });
    });
    return this.#told(id);
  }

  list(status: AiApprovalStatus | undefined, limit: number): ApprovalView[] {
    return this.#deps.repo.list(status, limit).map(approvalView);
  }

  get(id: string): ApprovalView {
    return approvalView(this.#load(id));
  }

  async approve(id: string, by: Asker, facts: RequestFacts): Promise<ApprovalView> {
    const { repo, clock } = this.#deps;
    const row = this.#load(id);
    pending(row);
    if (by.human === row.requested_by_human) {
      this.#deny(row, by, facts, "self_approval");
      throw new AppError(
        403,
        "AI_SELF_APPROVAL",
        "You cannot approve a change you requested: another user with approve:ai must review it",
      );
    }
    if (!grants(by.permissions, row.permission)) {
      this.#deny(row, by, facts, "missing_permission");
      throw new AppError(
        403,
        "FORBIDDEN",
        `Approving this change also needs permission "${row.permission}"`,
        { details: { permission: row.permission } },
      );
    }
    const now = clock.now();
    if (
      !repo.decide(id, { from: "pending", to: "applying" }, { key: by.key, name: by.name }, now)
    ) {
      pending(this.#load(id));
    }
    const ctx = { ...facts, actor: actorOf(by) };
    let applied: AppliedChange;
    try {
      applied = await this.#deps.apply(row.tool, JSON.parse(row.change), ctx);
    } catch (err) {
      this.#failed(row, by, ctx, err);
      throw err;
    }
    this.#deps.transaction(() => {
      repo.finish(id, "applied", { target: applied.target, object: applied.object });
      this.#deps.audit.record({
        ...ctx,
        action: "ai.approval.approve",
        target: id,
        result: "success",
        detail: { ...both(row, by), applied_to: applied.target, change: JSON.parse(row.change) },
      });
    });
    return this.#told(id);
  }

  reject(id: string, by: Asker, reason: string | undefined, facts: RequestFacts): ApprovalView {
    const { repo, audit, clock } = this.#deps;
    const row = this.#load(id);
    pending(row);
    this.#deps.transaction(() => {
      if (
        !repo.decide(
          id,
          { from: "pending", to: "rejected" },
          { key: by.key, name: by.name },
          clock.now(),
        )
      ) {
        pending(this.#load(id));
      }
      repo.finish(id, "rejected", { reason: reason ?? null });
      audit.record({
        ...facts,
        actor: actorOf(by),
        action: "ai.approval.reject",
        target: id,
        result: "success",
        detail: { ...both(row, by), reason: reason ?? null },
      });
    });
    return this.#told(id);
  }

  /** The stored request, told to `changed`. */
  #told(id: string): ApprovalView {
    const v = approvalView(this.#load(id));
    this.#deps.changed?.(v);
    return v;
  }

  #load(id: string): AiApprovalRow {
    const row = this.#deps.repo.get(id);
    if (!row) throw new AppError(404, "NOT_FOUND", `No approval request "${id}"`);
    return row;
  }

  #deny(row: AiApprovalRow, by: Asker, facts: RequestFacts, reason: string): void {
    this.#deps.transaction(() =>
      this.#deps.audit.record({
        ...facts,
        actor: actorOf(by),
        action: "ai.approval.approve",
        target: row.id,
        result: "denied",
        detail: { reason, tool: row.tool, requested_by: row.requested_by },
      })
    );
  }

  /** An approved change that failed to apply: the request is `failed`, audited and told. */
  #failed(row: AiApprovalRow, by: Asker, ctx: ActorContext, err: unknown): void {
    const error = err instanceof AppError
      ? { code: err.code, message: err.message }
      : { code: "INTERNAL", message: "Internal error: see the server log" };
    this.#deps.transaction(() => {
      this.#deps.repo.finish(row.id, "failed", { error });
      this.#deps.audit.record({
        ...ctx,
        action: "ai.approval.approve",
        target: row.id,
        result: "failure",
        detail: { ...both(row, by), error },
      });
    });
    this.#told(row.id);
  }
}

/** 409 `CONFLICT` unless the request is still pending. */
function pending(row: AiApprovalRow): void {
  if (row.status !== "pending") {
    throw new AppError(409, "CONFLICT", `Approval request "${row.id}" is already ${row.status}`, {
      details: { status: row.status },
    });
  }
}

/** Both users of a decision, for its audit record. */
const both = (row: AiApprovalRow, by: Asker) => ({
  tool: row.tool,
  requested_by: { id: row.requested_by, name: row.requested_by_name },
  decided_by: { id: by.key, name: by.name },
});

/** Approval requests over `deps.repo`; approved changes go through `deps.apply`. */
export function createApprovals(deps: ApprovalsDeps): Approvals {
  return new ApprovalsService(deps);
}
