/**
 * Runs one tool call of the model: the tool must be allowed and within the asker's permissions
 * (checked again here, after it was offered), its arguments must match its schema; a read tool
 * runs at once, a change tool only becomes an approval request. Failures come back as the
 * tool's result, for the model to see, never as an exception.
 */
import type { AuditEvent } from "../core/audit.ts";
import { AppError, badRequest } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { Approvals, ApprovalView } from "./approvals.ts";
import type { ChangeTools } from "./change_tools.ts";
import type { ToolCall } from "./chat_wire.ts";
import type { readTools } from "./read_tools.ts";
import { TOOL_ARGS, type ToolName, toolSpec } from "./tool_catalog.ts";
import { type Asker, checkTool, parseWith } from "./tools.ts";

export type ToolOutcome =
  | { readonly ok: true; readonly result: unknown; readonly approval?: ApprovalView }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };

export interface ToolRunnerDeps {
  readonly reads: ReturnType<typeof readTools>;
  readonly changes: ChangeTools;
  readonly approvals: Approvals;
  readonly logger: Logger;
}

/** Whose question the call answers, and the tools the configuration allows. */
export interface ToolCallContext {
  readonly asker: Asker;
  readonly conversationId: string;
  readonly facts: Pick<AuditEvent, "clientIp" | "traceId">;
  readonly allowed: readonly ToolName[];
}

export function createToolRunner(deps: ToolRunnerDeps) {
  async function attempt(call: ToolCall, ctx: ToolCallContext): Promise<ToolOutcome> {
    const { asker, conversationId, facts, allowed } = ctx;
    const spec = checkTool(toolSpec(call.function.name), call.function.name, allowed, asker);
    let raw: unknown;
    try {
      raw = JSON.parse(call.function.arguments || "{}");
    } catch {
      throw badRequest("The tool arguments are not valid JSON");
    }
    const args = parseWith(TOOL_ARGS[spec.name], raw);
    if (spec.risk === "read") {
      const run = deps.reads[spec.name as keyof typeof deps.reads] as (
        args: unknown,
        asker: Asker,
      ) => unknown;
      return { ok: true, result: await run(args, asker) };
    }
    const planned = await deps.changes.plan(spec.name, args);
    const approval = deps.approvals.request({
      asker,
      conversationId,
      tool: spec.name,
      permission: spec.permission,
      planned,
      facts,
    });
    return {
      ok: true,
      approval,
      result: {
        status: "pending_approval",
        approval_id: approval.id,
        summary: approval.summary,
        note: "Nothing has changed yet: another administrator must approve this request.",
      },
    };
  }

  return {
    async run(call: ToolCall, ctx: ToolCallContext): Promise<ToolOutcome> {
      try {
        return await attempt(call, ctx);
      } catch (err) {
        if (err instanceof AppError) {
          return { ok: false, error: { code: err.code, message: err.message } };
        }
        deps.logger.error("AI tool failed", { tool: call.function.name, error: err as Error });
        return {
          ok: false,
          error: { code: "INTERNAL", message: "The tool failed: see the server log" },
        };
      }
    },
  };
}

export type ToolRunner = ReturnType<typeof createToolRunner>;
