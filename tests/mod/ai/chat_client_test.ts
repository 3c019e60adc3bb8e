/** The chat-completions client against a real scripted provider on loopback. */
import { assertEquals, assertRejects, ok } from "../../_helpers/assert.ts";
import { startFakeProvider } from "../../_helpers/openai_server.ts";
import type { ProviderSettings } from "../../../mod/ai/ai_config.ts";
import { completionsUrl, createChatClient } from "../../../mod/ai/chat_client.ts";
import { AppError } from "../../../mod/core/errors.ts";

const client = createChatClient();
const settings = (baseUrl: string, over: Partial<ProviderSettings> = {}): ProviderSettings => ({
  baseUrl,
  model: "test-model",
  apiKey: "sk-test-0123456789abcdef",
  timeoutMs: 5000,
  maxTokens: 256,
  tools: [],
  ...over,
});
const messages = [{ role: "user" as const, content: "hello" }];

async function code(p: Promise<unknown>): Promise<AppError> {
  let caught: unknown;
  await assertRejects(p.catch((e) => {
    caught = e;
    throw e;
  }));
  ok(caught instanceof AppError, String(caught));
  return caught;
}

Deno.test("chat() streams text token by token, asks for usage and reports it", async () => {
  await using p = startFakeProvider();
  p.script({ text: "Seven blocked requests.", usage: { prompt_tokens: 42, completion_tokens: 7 } });
  const tokens: string[] = [];
  const r = await client.chat(settings(p.baseUrl), {
    messages,
    onToken: (t) => void tokens.push(t),
  });
  assertEquals(r.content, "Seven blocked requests.");
  ok(tokens.length > 1, "streamed in several pieces");
  assertEquals(tokens.join(""), r.content);
  assertEquals(r.usage, { prompt_tokens: 42, completion_tokens: 7 });
  assertEquals(r.finishReason, "stop");
  const sent = p.requests[0]!;
  assertEquals(sent.body.stream, true);
  assertEquals(sent.body.stream_options, { include_usage: true });
  assertEquals(sent.body.model, "test-model");
  assertEquals(sent.body.max_tokens, 256);
  assertEquals(sent.headers.get("authorization"), "Bearer sk-test-0123456789abcdef");
});

Deno.test("chat() reassembles tool calls whose arguments arrive in fragments", async () => {
  await using p = startFakeProvider();
  p.script({
    toolCalls: [
      { name: "lookup_ip", arguments: { ip: "203.0.113.9" }, id: "call_a" },
      { name: "summarize_attacks", arguments: { hours: 6 }, id: "call_b" },
    ],
  });
  const tools = [{ type: "function", function: { name: "lookup_ip", parameters: {} } }];
  const r = await client.chat(settings(p.baseUrl), { messages, tools, onToken: () => {} });
  assertEquals(r.finishReason, "tool_calls");
  assertEquals(r.toolCalls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]), [
    ["call_a", "lookup_ip", { ip: "203.0.113.9" }],
    ["call_b", "summarize_attacks", { hours: 6 }],
  ]);
  assertEquals(p.requests[0]!.body.tools?.length, 1);
});

Deno.test("chat() without onToken asks for one JSON answer, with tool calls", async () => {
  await using p = startFakeProvider();
  p.script({ text: "OK", toolCalls: [{ name: "lookup_ip", arguments: { ip: "::1" } }] });
  const r = await client.chat(settings(p.baseUrl), { messages });
  assertEquals(p.requests[0]!.body.stream, false);
  assertEquals(p.requests[0]!.body.stream_options, undefined);
  assertEquals(r.content, "OK");
  assertEquals(r.toolCalls[0]!.function.name, "lookup_ip");
  assertEquals(r.usage, { prompt_tokens: 10, completion_tokens: 5 });
});

Deno.test("chat() falls back to a whole JSON answer when the provider does not stream", async () => {
  await using p = startFakeProvider();
  p.script({ text: "Not streamed", json: true });
  const tokens: string[] = [];
  const r = await client.chat(settings(p.baseUrl), {
    messages,
    onToken: (t) => void tokens.push(t),
  });
  assertEquals(p.requests[0]!.body.stream, true);
  assertEquals(r.content, "Not streamed");
  assertEquals(tokens, ["Not streamed"]);
});

Deno.test("chat() turns a provider's HTTP error into AI_PROVIDER_ERROR with its message, never the key", async () => {
  await using p = startFakeProvider();
  p.script({ status: 401, error: "Incorrect API key provided: sk-test-0123456789abcdef" });
  const err = await code(client.chat(settings(p.baseUrl), { messages, onToken: () => {} }));
  assertEquals(err.code, "AI_PROVIDER_ERROR");
  assertEquals(err.status, 502);
  assertEquals(err.details?.["provider_status"], 401);
  ok(err.message.includes("HTTP 401"), err.message);
  ok(!err.message.includes("sk-test-0123456789abcdef"), err.message);
});

Deno.test("chat() reports an error the provider streams mid-answer", async () => {
  await using p = startFakeProvider();
  p.script({ streamError: "The model is overloaded" });
  const err = await code(client.chat(settings(p.baseUrl), { messages, onToken: () => {} }));
  assertEquals(err.code, "AI_PROVIDER_ERROR");
  ok(err.message.includes("The model is overloaded"), err.message);
});

Deno.test("chat() names an unreachable provider", async () => {
  const p = startFakeProvider();
  const url = p.baseUrl;
  await p[Symbol.asyncDispose]();
  const err = await code(client.chat(settings(url), { messages, onToken: () => {} }));
  assertEquals(err.code, "AI_PROVIDER_UNREACHABLE");
  assertEquals(err.status, 502);
  ok(err.message.includes(new URL(url).origin), err.message);
});

Deno.test("chat() gives up after timeout_ms without an answer", async () => {
  await using p = startFakeProvider();
  p.script({ hang: true });
  const err = await code(
    client.chat(settings(p.baseUrl, { timeoutMs: 1000 }), { messages, onToken: () => {} }),
  );
  assertEquals(err.code, "AI_PROVIDER_TIMEOUT");
  assertEquals(err.status, 504);
  assertEquals(err.details?.["timeout_ms"], 1000);
});

Deno.test("completionsUrl() appends /chat/completions and keeps a query such as api-version", () => {
  assertEquals(completionsUrl("http://h/v1").href, "http://h/v1/chat/completions");
  assertEquals(completionsUrl("http://h/v1/").href, "http://h/v1/chat/completions");
  assertEquals(
    completionsUrl("https://r.openai.azure.com/openai/v1?api-version=preview").href,
    "https://r.openai.azure.com/openai/v1/chat/completions?api-version=preview",
  );
});
