/**
 * A scripted OpenAI-compatible chat-completions server on loopback: the AI tests' provider.
 * It speaks the real wire format (`POST /v1/chat/completions`; Server-Sent Events chunks with
 * fragmented tool-call arguments and a final usage chunk when `stream: true`, one JSON answer
 * otherwise) and plays the answers a test scripts, in order, recording every request.
 */

export interface ScriptedToolCall {
  readonly name: string;
  readonly arguments: Record<string, unknown> | string;
  readonly id?: string;
}

export type ScriptedAnswer =
  | {
    readonly text?: string;
    readonly toolCalls?: readonly ScriptedToolCall[];
    readonly usage?: { prompt_tokens: number; completion_tokens: number };
    /** Answer with one JSON body even when the request asked to stream. */
    readonly json?: boolean;
  }
  /** An HTTP error in OpenAI's error shape. */
  | { readonly status: number; readonly error: string }
  /** Never answers (until the client gives up). */
  | { readonly hang: true }
  /** Starts streaming, then sends an error object mid-stream. */
  | { readonly streamError: string };

export interface ProviderRequest {
  readonly headers: Headers;
  readonly body: {
    model: string;
    stream: boolean;
    stream_options?: { include_usage: boolean };
    max_tokens: number;
    tools?: Array<{ function: { name: string } }>;
    messages: Array<{
      role: string;
      content: string | null;
      tool_call_id?: string;
      tool_calls?: unknown[];
    }>;
  };
}

export interface FakeProvider extends AsyncDisposable {
  /** The base URL to configure: `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  readonly requests: ProviderRequest[];
  /** Queues answers for the next requests. */
  script(...answers: ScriptedAnswer[]): void;
  /** Answers still queued. */
  readonly pending: number;
}

const encoder = new TextEncoder();

function pieces(text: string): string[] {
  const n = Math.max(1, Math.ceil(text.length / 3));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += n) out.push(text.slice(i, i + n));
  return out;
}

function toolCalls(calls: readonly ScriptedToolCall[] | undefined) {
  return (calls ?? []).map((c, i) => ({
    id: c.id ?? `call_${i + 1}`,
    type: "function",
    function: {
      name: c.name,
      arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments),
    },
  }));
}

export function startFakeProvider(): FakeProvider {
  const queue: ScriptedAnswer[] = [];
  const requests: ProviderRequest[] = [];
  const ac = new AbortController();
  const closed = new Promise<void>((resolve) =>
    ac.signal.addEventListener("abort", () => resolve())
  );

  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: ac.signal },
    async (req) => {
      const url = new URL(req.url);
      if (req.method !== "POST" || url.pathname !== "/v1/chat/completions") {
        return Response.json({ error: { message: "Not found" } }, { status: 404 });
      }
      const body = await req.json() as ProviderRequest["body"];
      requests.push({ headers: req.headers, body });
      const answer = queue.shift();
      if (!answer) {
        return Response.json({ error: { message: "no scripted answer left" } }, { status: 500 });
      }
      if ("hang" in answer) {
        await closed;
        return new Response(null, { status: 499 });
      }
      if ("status" in answer) {
        return Response.json({ error: { message: answer.error, type: "invalid_request_error" } }, {
          status: answer.status,
        });
      }
      const id = `chatcmpl-${requests.length}`;
      if ("streamError" in answer) {
        const chunk = { id, choices: [{ index: 0, delta: { content: "Par" } }] };
        return new Response(
          `data: ${JSON.stringify(chunk)}\n\ndata: ${
            JSON.stringify({ error: { message: answer.streamError } })
          }\n\n`,
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      const calls = toolCalls(answer.toolCalls);
      const finish = calls.length > 0 ? "tool_calls" : "stop";
      const usage = answer.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
      if (!body.stream || answer.json) {
        return Response.json({
          id,
          object: "chat.completion",
          model: body.model,
          choices: [{
            index: 0,
            message: {
              role: "assistant",
              content: answer.text ?? null,
              ...(calls.length ? { tool_calls: calls } : {}),
            },
            finish_reason: finish,
          }],
          usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
        });
      }
      const events: unknown[] = [{ id, choices: [{ index: 0, delta: { role: "assistant" } }] }];
      for (const p of pieces(answer.text ?? "")) {
        events.push({ id, choices: [{ index: 0, delta: { content: p } }] });
      }
      calls.forEach((c, index) => {
        events.push({
          id,
          choices: [{
            index: 0,
            delta: {
              tool_calls: [{
                index,
                id: c.id,
                type: "function",
                function: { name: c.function.name, arguments: "" },
              }],
            },
          }],
        });
        for (const p of pieces(c.function.arguments)) {
          events.push({
            id,
            choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: p } }] } }],
          });
        }
      });
      events.push({ id, choices: [{ index: 0, delta: {}, finish_reason: finish }] });
      if (body.stream_options?.include_usage) events.push({ id, choices: [], usage });
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const e of events) {
            controller.enqueue(encoder.encode(`data: ${JSON.stringify(e)}\n\n`));
          }
          controller.enqueue(encoder.encode("data: [DONE]\n\n"));
          controller.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    },
  );
  const port = (server.addr as Deno.NetAddr).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...answers) => void queue.push(...answers),
    get pending() {
      return queue.length;
    },
    async [Symbol.asyncDispose]() {
      ac.abort();
      await server.finished;
    },
  };
}
