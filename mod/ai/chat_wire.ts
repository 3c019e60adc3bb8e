/**
 * The chat-completions wire format: its messages and tool calls, and reading an answer, either
 * Server-Sent Events chunks (parsed by `eventsource-parser`, the one file that imports it) or one
 * JSON body. Provider failures become AppErrors with an `AI_PROVIDER_*` code and the reason as
 * data; text the provider sends back has the API key scrubbed.
 */
import { createParser } from "eventsource-parser";
import { AppError } from "../core/errors.ts";

export interface ToolCall {
  readonly id: string;
  readonly type: "function";
  readonly function: { readonly name: string; readonly arguments: string };
}

export type ChatMessage =
  | { readonly role: "system" | "user"; readonly content: string }
  | {
    readonly role: "assistant";
    readonly content: string | null;
    readonly tool_calls?: readonly ToolCall[];
  }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string };

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
}

export interface ChatResult {
  readonly content: string;
  readonly toolCalls: readonly ToolCall[];
  readonly finishReason: string | null;
  /** Undefined when the provider reported none. */
  readonly usage: Usage | undefined;
}

export type ProviderFailure = "unreachable" | "timeout" | "http" | "protocol" | "cancelled";

const CODES: Readonly<Record<ProviderFailure, [number, string]>> = {
  unreachable: [502, "AI_PROVIDER_UNREACHABLE"],
  timeout: [504, "AI_PROVIDER_TIMEOUT"],
  http: [502, "AI_PROVIDER_ERROR"],
  protocol: [502, "AI_PROVIDER_PROTOCOL"],
  cancelled: [499, "AI_CANCELLED"],
};

export function failure(
  reason: ProviderFailure,
  message: string,
  extra: Record<string, unknown> = {},
  cause?: unknown,
): AppError {
  const [status, code] = CODES[reason];
  return new AppError(status, code, message, { details: { reason, ...extra }, cause });
}

/** Largest error or JSON answer read from the provider. */
export const MAX_BODY = 4 * 1024 * 1024;
const decoder = new TextDecoder();
/** Removes the key from text that came back from the provider (some echo it in errors). */
export function scrub(text: string, key: string | undefined): string {
  const short = text.length > 500 ? `${text.slice(0, 500)}...` : text;
  return key && key.length >= 4 ? short.split(key).join("****") : short;
}

export function providerMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as {
      error?: { message?: unknown } | string;
      message?: unknown;
    };
    if (typeof parsed.error === "string") return parsed.error;
    if (typeof parsed.error?.message === "string") return parsed.error.message;
    if (typeof parsed.message === "string") return parsed.message;
  } catch {
    // not JSON: the text itself
  }
  return body.trim() || "(empty body)";
}

export interface Accumulated {
  content: string;
  calls: Array<{ id: string; name: string; arguments: string }>;
  finishReason: string | null;
  usage: Usage | undefined;
}

function usageOf(value: unknown): Usage | undefined {
  const u = value as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  if (!u || typeof u !== "object") return undefined;
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : 0);
  return { prompt_tokens: n(u.prompt_tokens), completion_tokens: n(u.completion_tokens) };
}

/** Folds one streamed chunk (or a whole answer's `message`) into the result. */
function absorb(acc: Accumulated, delta: Record<string, unknown> | undefined): string {
  if (!delta) return "";
  const text = typeof delta["content"] === "string" ? delta["content"] : "";
  acc.content += text;
  const calls = delta["tool_calls"];
  if (Array.isArray(calls)) {
    for (const [i, raw] of calls.entries()) {
      const c = raw as {
        index?: number;
        id?: string;
        function?: { name?: string; arguments?: string };
      };
      const at = typeof c.index === "number" ? c.index : i;
      const slot = acc.calls[at] ??= { id: "", name: "", arguments: "" };
      if (typeof c.id === "string" && c.id) slot.id = c.id;
      if (typeof c.function?.name === "string") slot.name += c.function.name;
      if (typeof c.function?.arguments === "string") slot.arguments += c.function.arguments;
    }
  }
  return text;
}

export function result(acc: Accumulated): ChatResult {
  return {
    content: acc.content,
    toolCalls: acc.calls.filter((c) => c && c.name).map((c, i) => ({
      id: c.id || `call_${i}`,
      type: "function" as const,
      function: { name: c.name, arguments: c.arguments || "{}" },
    })),
    finishReason: acc.finishReason,
    usage: acc.usage,
  };
}

/** The body as text, refusing more than MAX_BODY; `progress` runs on every chunk. */
export async function readBounded(res: Response, progress: () => void): Promise<string> {
  if (!res.body) return "";
  const parts: string[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    progress();
    size += chunk.byteLength;
    if (size > MAX_BODY) {
      throw failure("protocol", `The AI provider's answer is larger than ${MAX_BODY} bytes`);
    }
    parts.push(decoder.decode(chunk, { stream: true }));
  }
  parts.push(decoder.decode());
  return parts.join("");
}

function streamedError(value: unknown, key: string | undefined): AppError | undefined {
  const e = (value as { error?: unknown } | null)?.error;
  if (e === undefined || e === null) return undefined;
  return failure(
    "http",
    `The AI provider reported an error: ${
      scrub(providerMessage(JSON.stringify({ error: e })), key)
    }`,
  );
}

/** Folds one whole JSON answer into `acc`. */
export function readWhole(text: string, acc: Accumulated, key: string | undefined): void {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw failure("protocol", "The AI provider's answer is not JSON", {}, err);
  }
  const error = streamedError(parsed, key);
  if (error) throw error;
  const choice = (parsed["choices"] as Array<Record<string, unknown>> | undefined)?.[0];
  if (!choice || typeof choice !== "object") {
    throw failure("protocol", "The AI provider's answer has no choices");
  }
  absorb(acc, choice["message"] as Record<string, unknown> | undefined);
  acc.finishReason = typeof choice["finish_reason"] === "string" ? choice["finish_reason"] : null;
  acc.usage = usageOf(parsed["usage"]);
}

/** How {@link readStream} reports what it reads. */
export interface StreamReading {
  /** Called for each chunk received (re-arms the idle timeout). */
  readonly progress: () => void;
  /** Receives the text pieces as they come. */
  readonly onToken: ((text: string) => void | Promise<void>) | undefined;
  /** The API key, scrubbed from any error message the provider streams. */
  readonly key: string | undefined;
}

/** Folds a Server-Sent Events answer into `acc`, passing text pieces to `onToken` as they come. */
export async function readStream(
  res: Response,
  acc: Accumulated,
  { progress, onToken, key }: StreamReading,
): Promise<void> {
  const pending: string[] = [];
  let done = false;
  let problem: AppError | undefined;
  const parser = createParser({
    onEvent(event) {
      if (done || problem) return;
      if (event.data === "[DONE]") {
        done = true;
        return;
      }
      let chunk: Record<string, unknown>;
      try {
        chunk = JSON.parse(event.data);
      } catch (err) {
        problem = failure("protocol", "The AI provider streamed a chunk that is not JSON", {}, err);
        return;
      }
      problem = streamedError(chunk, key);
      if (problem) return;
      const usage = usageOf(chunk["usage"]);
      if (usage) acc.usage = usage;
      const choice = (chunk["choices"] as Array<Record<string, unknown>> | undefined)?.[0];
      if (!choice) return;
      const text = absorb(acc, choice["delta"] as Record<string, unknown> | undefined);
      if (text) pending.push(text);
      if (typeof choice["finish_reason"] === "string") acc.finishReason = choice["finish_reason"];
    },
  });
  if (!res.body) throw failure("protocol", "The AI provider sent no body");
  const streamDecoder = new TextDecoder();
  for await (const chunk of res.body) {
    progress();
    parser.feed(streamDecoder.decode(chunk, { stream: true }));
    if (problem) throw problem;
    for (const text of pending.splice(0)) await onToken?.(text);
    if (done) break;
  }
  if (!done && acc.finishReason === null) {
    throw failure("protocol", "The AI provider's stream ended before the answer was complete");
  }
}
