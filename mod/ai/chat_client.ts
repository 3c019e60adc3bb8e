/**
 * A client of the OpenAI chat-completions wire format over `fetch` (OpenAI, Azure OpenAI's v1
 * API, DeepSeek, Qwen, Ollama, vLLM all speak it). It streams (`stream: true`, Server-Sent
 * Events, parsed by `eventsource-parser`, the one file that imports it) and falls back to a
 * whole JSON answer when the provider does not stream. Tool calls use the function-calling
 * format; usage comes from the provider (`stream_options.include_usage`). `timeoutMs` bounds
 * the wait for the response headers and every pause between two streamed chunks. Every
 * failure becomes an AppError with an `AI_PROVIDER_*` code and the reason as data.
 */
import { createParser } from "eventsource-parser";
import { AppError } from "../core/errors.ts";
import type { ProviderSettings } from "./ai_config.ts";

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

export interface ChatOptions {
  readonly messages: readonly ChatMessage[];
  /** Function definitions (chat-completions `tools`); none when empty. */
  readonly tools?: readonly unknown[];
  /** Streams, calling `onToken` with each piece of text. */
  readonly onToken?: (text: string) => void | Promise<void>;
  /** Aborts the call (the asking client went away). */
  readonly signal?: AbortSignal;
  /** Overrides the configured maximum (the connection test asks for a few tokens). */
  readonly maxTokens?: number;
}

export type ProviderFailure = "unreachable" | "timeout" | "http" | "protocol" | "cancelled";

const CODES: Readonly<Record<ProviderFailure, [number, string]>> = {
  unreachable: [502, "AI_PROVIDER_UNREACHABLE"],
  timeout: [504, "AI_PROVIDER_TIMEOUT"],
  http: [502, "AI_PROVIDER_ERROR"],
  protocol: [502, "AI_PROVIDER_PROTOCOL"],
  cancelled: [499, "AI_CANCELLED"],
};

function failure(
  reason: ProviderFailure,
  message: string,
  extra: Record<string, unknown> = {},
  cause?: unknown,
): AppError {
  const [status, code] = CODES[reason];
  return new AppError(status, code, message, { details: { reason, ...extra }, cause });
}

/** Largest error or JSON answer read from the provider. */
const MAX_BODY = 4 * 1024 * 1024;
const decoder = new TextDecoder();

/** `<base_url>/chat/completions`, keeping a query such as Azure's `api-version`. */
export function completionsUrl(baseUrl: string): URL {
  const u = new URL(baseUrl);
  u.pathname = `${u.pathname.replace(/\/+$/, "")}/chat/completions`;
  return u;
}

/** Removes the key from text that came back from the provider (some echo it in errors). */
function scrub(text: string, key: string | undefined): string {
  const short = text.length > 500 ? `${text.slice(0, 500)}...` : text;
  return key && key.length >= 4 ? short.split(key).join("****") : short;
}

function providerMessage(body: string): string {
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

interface Accumulated {
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

function result(acc: Accumulated): ChatResult {
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

export interface ChatClient {
  chat(settings: ProviderSettings, options: ChatOptions): Promise<ChatResult>;
}

export function createChatClient(deps: { fetch?: typeof fetch } = {}): ChatClient {
  const doFetch = deps.fetch ?? fetch;

  return {
    async chat(settings, options) {
      const url = completionsUrl(settings.baseUrl);
      const stream = options.onToken !== undefined;
      const body: Record<string, unknown> = {
        model: settings.model,
        messages: options.messages,
        max_tokens: options.maxTokens ?? settings.maxTokens,
        stream,
      };
      if (stream) body["stream_options"] = { include_usage: true };
      if (options.tools && options.tools.length > 0) {
        body["tools"] = options.tools;
        body["tool_choice"] = "auto";
      }
      const headers: Record<string, string> = {
        "content-type": "application/json",
        accept: stream ? "text/event-stream, application/json" : "application/json",
      };
      if (settings.apiKey) {
        headers["authorization"] = `Bearer ${settings.apiKey}`;
        // Azure OpenAI reads its key from this header instead.
        headers["api-key"] = settings.apiKey;
      }

      const controller = new AbortController();
      let timedOut = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          timedOut = true;
          controller.abort();
        }, settings.timeoutMs);
      };
      const cancel = () => controller.abort();
      options.signal?.addEventListener("abort", cancel, { once: true });
      const interrupted = (err: unknown): AppError => {
        if (timedOut) {
          return failure(
            "timeout",
            `The AI provider did not answer within ${settings.timeoutMs} ms (timeout_ms)`,
            { timeout_ms: settings.timeoutMs },
            err,
          );
        }
        if (options.signal?.aborted) return failure("cancelled", "The request was cancelled");
        if (err instanceof AppError) return err;
        return failure(
          "unreachable",
          `The AI provider at "${url.origin}" cannot be reached: ${
            err instanceof Error ? err.message : String(err)
          }`,
          { base_url: settings.baseUrl },
          err,
        );
      };

      arm();
      try {
        let res: Response;
        try {
          res = await doFetch(url, {
            method: "POST",
            headers,
            body: JSON.stringify(body),
            signal: controller.signal,
            redirect: "error",
          });
        } catch (err) {
          throw interrupted(err);
        }
        arm();
        if (!res.ok) {
          const text = await readBounded(res, arm).catch(() => "");
          throw failure(
            "http",
            `The AI provider answered HTTP ${res.status}: ${
              scrub(providerMessage(text), settings.apiKey)
            }`,
            { provider_status: res.status },
          );
        }
        const acc: Accumulated = { content: "", calls: [], finishReason: null, usage: undefined };
        const type = res.headers.get("content-type") ?? "";
        if (type.includes("text/event-stream")) {
          await readStream(res, acc, arm, options.onToken, settings.apiKey);
        } else {
          await readWhole(await readBounded(res, arm), acc, settings.apiKey);
          if (options.onToken && acc.content) await options.onToken(acc.content);
        }
        return result(acc);
      } catch (err) {
        throw interrupted(err);
      } finally {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", cancel);
      }
    },
  };
}

/** The body as text, refusing more than MAX_BODY; `progress` runs on every chunk. */
async function readBounded(res: Response, progress: () => void): Promise<string> {
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

async function readWhole(text: string, acc: Accumulated, key: string | undefined): Promise<void> {
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
  await Promise.resolve();
}

async function readStream(
  res: Response,
  acc: Accumulated,
  progress: () => void,
  onToken: ((text: string) => void | Promise<void>) | undefined,
  key: string | undefined,
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
