/**
 * Answers one question in a conversation: sends the prompt and the tools the asker may use to
 * the model, streams its text, runs the tool calls it makes (read tools at once, change tools
 * as approval requests) and feeds their results back as quoted data, for a bounded number of
 * rounds. Every step is stored and reported as an event; token usage is counted per principal.
 */
import type { AiUsageRepo } from "../../db/ai_usage_repo.ts";
import type { AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { AiConfig } from "./ai_config.ts";
import type { ApprovalView } from "./approvals.ts";
import type { ChatClient } from "./chat_client.ts";
import type { Usage } from "./chat_wire.ts";
import type { Conversations } from "./conversations.ts";
import { buildPrompt, dataMessage } from "./prompt.ts";
import { TOOL_DEFINITIONS } from "./tool_catalog.ts";
import type { ToolRunner } from "./tool_runner.ts";
import { type Asker, offeredTools } from "./tools.ts";

/** Model calls per question: after the last tool round the model must answer in words. */
const MAX_ROUNDS = 6;

export type AssistantEvent =
  | { readonly type: "start"; readonly conversation_id: string; readonly message_id: number }
  | { readonly type: "token"; readonly text: string }
  | {
    readonly type: "tool_call";
    readonly id: string;
    readonly name: string;
    readonly arguments: unknown;
  }
  | {
    readonly type: "tool_result";
    readonly id: string;
    readonly name: string;
    readonly ok: boolean;
    readonly result?: unknown;
    readonly error?: { readonly code: string; readonly message: string };
  }
  | { readonly type: "approval"; readonly id: string; readonly approval: ApprovalView }
  | { readonly type: "done"; readonly message_id: number; readonly usage: Usage }
  | { readonly type: "error"; readonly code: string; readonly message: string };

export interface AssistantDeps {
  readonly config: AiConfig;
  readonly client: ChatClient;
  readonly conversations: Conversations;
  readonly tools: ToolRunner;
  readonly usage: AiUsageRepo;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface AskOptions {
  readonly asker: Asker;
  readonly conversationId: string;
  readonly content: string;
  readonly emit: (event: AssistantEvent) => Promise<void>;
  readonly signal?: AbortSignal;
  /** Client address and trace id of the asking request, for audit records. */
  readonly facts: Pick<AuditEvent, "clientIp" | "traceId">;
}

export function createAssistant(deps: AssistantDeps) {
  const busy = new Set<string>();
  /** The UTC day (`YYYY-MM-DD`) `daysAgo` days before today. */
  const day = (daysAgo = 0) =>
    new Date(deps.clock.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);

  async function loop(o: AskOptions): Promise<void> {
    const settings = await deps.config.provider();
    const allowed = settings.tools;
    const tools = offeredTools(allowed, o.asker);
    const definitions = tools.map((t) => TOOL_DEFINITIONS.get(t.name)!);
    const owner = o.asker.key;
    const total = { prompt_tokens: 0, completion_tokens: 0 };
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const last = round === MAX_ROUNDS - 1;
      const answer = await deps.client.chat(settings, {
        messages: buildPrompt(deps.conversations.messages(o.conversationId)),
        tools: last ? [] : definitions,
        onToken: (text) => o.emit({ type: "token", text }),
        signal: o.signal,
      });
      const usage = answer.usage ?? { prompt_tokens: 0, completion_tokens: 0 };
      deps.usage.add(owner, o.asker.name, day(), usage.prompt_tokens, usage.completion_tokens);
      total.prompt_tokens += usage.prompt_tokens;
      total.completion_tokens += usage.completion_tokens;
      const calls = last ? [] : answer.toolCalls;
      if (calls.length === 0) {
        const id = deps.conversations.append(owner, {
          conversation_id: o.conversationId,
          role: "assistant",
          content: answer.content,
          tool_calls: null,
          tool_call_id: null,
          tool_name: null,
        });
        await o.emit({ type: "done", message_id: id, usage: total });
        return;
      }
      deps.conversations.append(owner, {
        conversation_id: o.conversationId,
        role: "assistant",
        content: answer.content,
        tool_calls: JSON.stringify(calls),
        tool_call_id: null,
        tool_name: null,
      });
      for (const call of calls) {
        let args: unknown = call.function.arguments;
        try {
          args = JSON.parse(call.function.arguments);
        } catch {
          // shown as the model sent it
        }
        await o.emit({ type: "tool_call", id: call.id, name: call.function.name, arguments: args });
        const outcome = await deps.tools.run(call, {
          asker: o.asker,
          conversationId: o.conversationId,
          facts: o.facts,
          allowed,
        });
        deps.conversations.append(owner, {
          conversation_id: o.conversationId,
          role: "tool",
          content: dataMessage(
            call.function.name,
            outcome.ok ? outcome.result : { error: outcome.error },
          ),
          tool_calls: null,
          tool_call_id: call.id,
          tool_name: call.function.name,
        });
        if (outcome.ok && outcome.approval) {
          await o.emit({ type: "approval", id: call.id, approval: outcome.approval });
        }
        await o.emit(
          outcome.ok
            ? {
              type: "tool_result",
              id: call.id,
              name: call.function.name,
              ok: true,
              result: outcome.result,
            }
            : {
              type: "tool_result",
              id: call.id,
              name: call.function.name,
              ok: false,
              error: outcome.error,
            },
        );
      }
    }
  }

  return {
    /** One small non-streaming request with the stored settings; counts toward the asker's usage. */
    async test(
      asker: Asker,
    ): Promise<{ ok: true; model: string; reply: string; usage: Usage | null }> {
      const settings = await deps.config.provider();
      const answer = await deps.client.chat(settings, {
        messages: [
          { role: "system", content: "This is a connection test. Reply with the single word OK." },
          { role: "user", content: "ping" },
        ],
        maxTokens: 16,
      });
      const usage = answer.usage ?? null;
      deps.usage.add(
        asker.key,
        asker.name,
        day(),
        usage?.prompt_tokens ?? 0,
        usage?.completion_tokens ?? 0,
      );
      return { ok: true, model: settings.model, reply: answer.content.slice(0, 200), usage };
    },

    /** One principal's token usage per UTC day over the last `days` days (today included). */
    usageDays(owner: string, days: number) {
      const since = day(days - 1);
      return { since, rows: deps.usage.days(owner, since) };
    },

    /** Every principal's token usage over the last `days` UTC days (today included). */
    usageTotals(days: number) {
      const since = day(days - 1);
      return { since, rows: deps.usage.totals(since) };
    },

    /**
     * Checks what can be refused before an answer starts streaming (disabled, unknown
     * conversation, one already being answered) and stores the question.
     */
    async begin(o: Omit<AskOptions, "emit" | "signal">): Promise<number> {
      await deps.config.provider();
      deps.conversations.require(o.conversationId, o.asker.key);
      if (busy.has(o.conversationId)) {
        throw new AppError(409, "CONFLICT", "This conversation is still answering a question");
      }
      busy.add(o.conversationId);
      try {
        return deps.conversations.append(o.asker.key, {
          conversation_id: o.conversationId,
          role: "user",
          content: o.content,
          tool_calls: null,
          tool_call_id: null,
          tool_name: null,
        });
      } catch (err) {
        busy.delete(o.conversationId);
        throw err;
      }
    },

    /** Answers the question stored by `begin`; failures become an `error` event. */
    async answer(o: AskOptions): Promise<void> {
      try {
        await loop(o);
      } catch (err) {
        if (err instanceof AppError) {
          if (err.code !== "AI_CANCELLED") {
            if (err.status >= 500) {
              deps.logger.warn("AI provider request failed", {
                trace_id: o.facts.traceId,
                code: err.code,
                message: err.message,
              });
            }
            await o.emit({ type: "error", code: err.code, message: err.message }).catch(() => {});
          }
        } else {
          deps.logger.error("AI answer failed", { trace_id: o.facts.traceId, error: err as Error });
          await o.emit({
            type: "error",
            code: "INTERNAL",
            message: "Internal error: see the server log for this trace id",
          })
            .catch(() => {});
        }
      } finally {
        busy.delete(o.conversationId);
      }
    },
  };
}

export type Assistant = ReturnType<typeof createAssistant>;
