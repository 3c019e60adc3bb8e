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
import type { ToolCall, Usage } from "./chat_wire.ts";
import type { Conversations } from "./conversations.ts";
import { buildPrompt, dataMessage } from "./prompt.ts";
import { TOOL_DEFINITIONS, type ToolName } from "./tool_catalog.ts";
import type { ToolOutcome, ToolRunner } from "./tool_runner.ts";
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

type NewMessage = Parameters<Conversations["append"]>[1];
/** A message of the conversation being answered; the fields not given are null. */
type Reply = Pick<NewMessage, "role" | "content"> & Partial<NewMessage>;

/** The AI assistant (what `createAssistant` returns). */
export interface Assistant {
  /** One small non-streaming request with the stored settings; counts toward the asker's usage. */
  test(asker: Asker): Promise<{ ok: true; model: string; reply: string; usage: Usage | null }>;
  /**
   * Checks what can be refused before an answer starts streaming (disabled, unknown
   * conversation, one already being answered) and stores the question.
   */
  begin(o: Omit<AskOptions, "emit" | "signal">): Promise<number>;
  /** Answers the question stored by `begin`; failures become an `error` event. */
  answer(o: AskOptions): Promise<void>;
  /** One principal's token usage per UTC day over the last `days` days (today included). */
  usageDays(owner: string, days: number): { since: string; rows: ReturnType<AiUsageRepo["days"]> };
  /** Every principal's token usage over the last `days` UTC days (today included). */
  usageTotals(days: number): { since: string; rows: ReturnType<AiUsageRepo["totals"]> };
}

class AssistantService implements Assistant {
  readonly #deps: AssistantDeps;
  /** Conversations answering a question now (one question at a time each). */
  readonly #busy = new Set<string>();

  constructor(deps: AssistantDeps) {
    this.#deps = deps;
  }

  async test(
    asker: Asker,
  ): Promise<{ ok: true; model: string; reply: string; usage: Usage | null }> {
    const deps = this.#deps;
    const settings = await deps.config.provider();
    const answer = await deps.client.chat(settings, {
      messages: [
        { role: "system", content: "This is a connection test. Reply with the single word OK." },
        { role: "user", content: "ping" },
      ],
      maxTokens: 16,
    });
    const usage = answer.usage ?? null;
    this.#count(asker, usage?.prompt_tokens ?? 0, usage?.completion_tokens ?? 0);
    return { ok: true, model: settings.model, reply: answer.content.slice(0, 200), usage };
  }

  async begin(o: Omit<AskOptions, "emit" | "signal">): Promise<number> {
    const deps = this.#deps;
    await deps.config.provider();
    deps.conversations.require(o.conversationId, o.asker.key);
    if (this.#busy.has(o.conversationId)) {
      throw new AppError(409, "CONFLICT", "This conversation is still answering a question");
    }
    this.#busy.add(o.conversationId);
    try {
      return this.#store(o, { role: "user", content: o.content });
    } catch (err) {
      this.#busy.delete(o.conversationId);
      throw err;
    }
  }

  async answer(o: AskOptions): Promise<void> {
    try {
      await this.#loop(o);
    } catch (err) {
      await this.#failed(o, err);
    } finally {
      this.#busy.delete(o.conversationId);
    }
  }

  /** The rounds of model calls and tool calls, until the model answers in words. */
  async #loop(o: AskOptions): Promise<void> {
    const deps = this.#deps;
    const settings = await deps.config.provider();
    const allowed = settings.tools;
    const tools = offeredTools(allowed, o.asker);
    const definitions = tools.map((t) => TOOL_DEFINITIONS.get(t.name)!);
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
      this.#count(o.asker, usage.prompt_tokens, usage.completion_tokens);
      total.prompt_tokens += usage.prompt_tokens;
      total.completion_tokens += usage.completion_tokens;
      const calls = last ? [] : answer.toolCalls;
      if (calls.length === 0) {
        const id = this.#store(o, { role: "assistant", content: answer.content });
        await o.emit({ type: "done", message_id: id, usage: total });
        return;
      }
      this.#store(o, {
        role: "assistant",
        content: answer.content,
        tool_calls: JSON.stringify(calls),
      });
      for (const call of calls) await this.#call(o, call, allowed);
    }
  }

  /** Runs one tool call of the model, stores its result and reports both. */
  async #call(o: AskOptions, call: ToolCall, allowed: readonly ToolName[]): Promise<void> {
    let args: unknown = call.function.arguments;
    try {
      args = JSON.parse(call.function.arguments);
    } catch {
      // shown as the model sent it
    }
    await o.emit({ type: "tool_call", id: call.id, name: call.function.name, arguments: args });
    const outcome = await this.#deps.tools.run(call, {
      asker: o.asker,
      conversationId: o.conversationId,
      facts: o.facts,
      allowed,
    });
    this.#store(o, {
      role: "tool",
      content: dataMessage(
        call.function.name,
        outcome.ok ? outcome.result : { error: outcome.error },
      ),
      tool_call_id: call.id,
      tool_name: call.function.name,
    });
    if (outcome.ok && outcome.approval) {
      await o.emit({ type: "approval", id: call.id, approval: outcome.approval });
    }
    await o.emit(toolResult(call, outcome));
  }

  /** A failed answer as an `error` event (logged unless the asker cancelled it). */
  async #failed(o: AskOptions, err: unknown): Promise<void> {
    const deps = this.#deps;
    if (err instanceof AppError) {
      if (err.code === "AI_CANCELLED") return;
      if (err.status >= 500) {
        deps.logger.warn("AI provider request failed", {
          trace_id: o.facts.traceId,
          code: err.code,
          message: err.message,
        });
      }
      await o.emit({ type: "error", code: err.code, message: err.message }).catch(() => {});
      return;
    }
    deps.logger.error("AI answer failed", { trace_id: o.facts.traceId, error: err as Error });
    await o.emit({
      type: "error",
      code: "INTERNAL",
      message: "Internal error: see the server log for this trace id",
    })
      .catch(() => {});
  }

  /** Stores a message of the asker's conversation; returns its id. */
  #store(o: Pick<AskOptions, "asker" | "conversationId">, m: Reply): number {
    return this.#deps.conversations.append(o.asker.key, {
      conversation_id: o.conversationId,
      role: m.role,
      content: m.content,
      tool_calls: m.tool_calls ?? null,
      tool_call_id: m.tool_call_id ?? null,
      tool_name: m.tool_name ?? null,
    });
  }

  usageDays(owner: string, days: number) {
    const since = this.#day(days - 1);
    return { since, rows: this.#deps.usage.days(owner, since) };
  }

  usageTotals(days: number) {
    const since = this.#day(days - 1);
    return { since, rows: this.#deps.usage.totals(since) };
  }

  /** The UTC day (`YYYY-MM-DD`) `daysAgo` days before today. */
  #day(daysAgo = 0): string {
    return new Date(this.#deps.clock.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
  }

  /** Counts tokens toward the asker's usage of today. */
  #count(asker: Asker, prompt: number, completion: number): void {
    this.#deps.usage.add(asker, this.#day(), { prompt, completion });
  }
}

/** The `tool_result` event of a tool call. */
function toolResult(call: ToolCall, outcome: ToolOutcome): AssistantEvent {
  return outcome.ok
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
    };
}

/** The assistant over the configured provider, the conversations and the tools. */
export function createAssistant(deps: AssistantDeps): Assistant {
  return new AssistantService(deps);
}
