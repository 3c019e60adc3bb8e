/**
 * A client of the OpenAI chat-completions wire format over `fetch` (OpenAI, Azure OpenAI's v1
 * API, DeepSeek, Qwen, Ollama, vLLM all speak it). It streams (`stream: true`, Server-Sent
 * Events) and falls back to a whole JSON answer when the provider does not stream. Tool calls
 * use the function-calling format; usage comes from the provider (`stream_options.include_usage`).
 * `timeoutMs` bounds the wait for the response headers and every pause between two streamed
 * chunks. Every failure becomes an AppError with an `AI_PROVIDER_*` code and the reason as data.
 */
import { AppError } from "../core/errors.ts";
import type { ProviderSettings } from "./ai_config.ts";
import {
  type Accumulated,
  type ChatMessage,
  type ChatResult,
  failure,
  providerMessage,
  readBounded,
  readStream,
  readWhole,
  result,
  scrub,
} from "./chat_wire.ts";

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

/** `<base_url>/chat/completions`, keeping a query such as Azure's `api-version`. */
export function completionsUrl(baseUrl: string): URL {
  const u = new URL(baseUrl);
  u.pathname = `${u.pathname.replace(/\/+$/, "")}/chat/completions`;
  return u;
}

/** A chat-completions client (what `createChatClient` returns). */
export interface ChatClient {
  /** One chat call with `settings`; streams when `options.onToken` is given. */
  chat(settings: ProviderSettings, options: ChatOptions): Promise<ChatResult>;
}

/** The chat-completions request body of a call. */
function requestBody(
  settings: ProviderSettings,
  options: ChatOptions,
  stream: boolean,
): Record<string, unknown> {
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
  return body;
}

function requestHeaders(settings: ProviderSettings, stream: boolean): Record<string, string> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: stream ? "text/event-stream, application/json" : "application/json",
  };
  if (settings.apiKey) {
    headers["authorization"] = `Bearer ${settings.apiKey}`;
    // Azure OpenAI reads its key from this header instead.
    headers["api-key"] = settings.apiKey;
  }
  return headers;
}

/** One call's deadline: the headers, then every next chunk, must come within `timeout_ms`. */
class Deadline {
  readonly controller = new AbortController();
  timedOut = false;
  readonly #ms: number;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** (Re)starts the wait; a function of its own, passed to the readers as their progress. */
  readonly arm = (): void => {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort();
    }, this.#ms);
  };

  clear(): void {
    clearTimeout(this.#timer);
  }
}

/** A call that ended early, as the AppError its caller sees. */
function interruption(
  err: unknown,
  call: { deadline: Deadline; settings: ProviderSettings; signal?: AbortSignal; url: URL },
): AppError {
  const { settings } = call;
  if (call.deadline.timedOut) {
    return failure(
      "timeout",
      `The AI provider did not answer within ${settings.timeoutMs} ms (timeout_ms)`,
      { timeout_ms: settings.timeoutMs },
      err,
    );
  }
  if (call.signal?.aborted) return failure("cancelled", "The request was cancelled");
  if (err instanceof AppError) return err;
  return failure(
    "unreachable",
    `The AI provider at "${call.url.origin}" cannot be reached: ${
      err instanceof Error ? err.message : String(err)
    }`,
    { base_url: settings.baseUrl },
    err,
  );
}

/** Reads the provider's answer, streamed or whole; an HTTP error becomes `AI_PROVIDER_HTTP`. */
async function readAnswer(
  res: Response,
  progress: () => void,
  settings: ProviderSettings,
  options: ChatOptions,
): Promise<ChatResult> {
  if (!res.ok) {
    const text = await readBounded(res, progress).catch(() => "");
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
    await readStream(res, acc, { progress, onToken: options.onToken, key: settings.apiKey });
  } else {
    readWhole(await readBounded(res, progress), acc, settings.apiKey);
    if (options.onToken && acc.content) await options.onToken(acc.content);
  }
  return result(acc);
}

/** A chat client over `deps.fetch` (the global one by default). */
export function createChatClient(deps: { fetch?: typeof fetch } = {}): ChatClient {
  const doFetch = deps.fetch ?? fetch;

  return {
    async chat(settings, options) {
      const url = completionsUrl(settings.baseUrl);
      const stream = options.onToken !== undefined;
      const body = requestBody(settings, options, stream);
      const headers = requestHeaders(settings, stream);
      const deadline = new Deadline(settings.timeoutMs);
      const cancel = () => deadline.controller.abort();
      options.signal?.addEventListener("abort", cancel, { once: true });
      const call = { deadline, settings, signal: options.signal, url };

      deadline.arm();
      try {
        let res: Response;
        try {
          res = await doFetch(url, {
            method: "POST",
            headers,
            body: JSON.stringify(body),
            signal: deadline.controller.signal,
            redirect: "error",
          });
        } catch (err) {
          throw interruption(err, call);
        }
        deadline.arm();
        return await readAnswer(res, deadline.arm, settings, options);
      } catch (err) {
        throw interruption(err, call);
      } finally {
        deadline.clear();
        options.signal?.removeEventListener("abort", cancel);
      }
    },
  };
}
