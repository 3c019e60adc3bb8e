/**
 * AI assistant test fixtures: a real server whose roles split the AI permissions, users for
 * each, a scripted provider on loopback, and a reader for the answer's Server-Sent Events.
 */
import {
  ADMIN,
  call,
  callJson,
  completeSetup,
  createUser,
  login,
  type Session,
} from "./identity.ts";
import { type FakeProvider, startFakeProvider } from "./openai_server.ts";
import { startTestServer, type TestServer } from "./server.ts";

export const AI_ROLES = {
  admin: ["*"],
  readonly: ["read:*", "read:cluster"],
  /** Asks questions and may propose blocks (holds write:protection), but not approve. */
  analyst: [
    "use:ai",
    "read:logs",
    "read:sites",
    "read:protection",
    "read:threat_intel",
    "write:protection",
  ],
  /** Asks questions with read permissions only. */
  viewer: ["use:ai", "read:logs", "read:sites"],
  /** Approves, and may make protection changes. */
  approver: ["approve:ai", "write:protection", "write:sites", "read:logs"],
  /** Approves, but holds none of the changes' permissions. */
  rubberstamp: ["approve:ai"],
  ai_reader: ["read:ai"],
  ai_writer: ["read:ai", "write:ai"],
};

export const PASSWORD = "Quartz-Falcon-77";

export interface AiFixture extends AsyncDisposable {
  readonly server: TestServer;
  readonly provider: FakeProvider;
  readonly as: Record<keyof typeof AI_ROLES, Session>;
}

/** A server with a user per role (named like the role), the assistant enabled on `provider`. */
export async function startAiFixture(
  options: { enable?: boolean; timeoutMs?: number; tokens?: boolean } = {},
): Promise<AiFixture> {
  const provider = startFakeProvider();
  const server = await startTestServer({
    config: {
      apisec: { permissions: AI_ROLES, management_api: { enabled: options.tokens ?? false } },
    },
  });
  await completeSetup(server);
  const as = { admin: await login(server, ADMIN.username, ADMIN.password) } as Record<
    keyof typeof AI_ROLES,
    Session
  >;
  for (const role of Object.keys(AI_ROLES) as Array<keyof typeof AI_ROLES>) {
    if (role === "admin") continue;
    const name = role.replace("_", "-");
    await createUser(server, name, PASSWORD, role);
    as[role] = await login(server, name, PASSWORD);
  }
  if (options.enable !== false) {
    const r = await callJson(server, "PUT", "/api/ai/config", {
      session: as.admin,
      body: {
        enabled: true,
        base_url: provider.baseUrl,
        model: "test-model",
        api_key: "sk-fixture-key-000111222333",
        timeout_ms: options.timeoutMs ?? 5000,
      },
    });
    if (r.status !== 200) throw new Error(`AI config failed: ${JSON.stringify(r.body)}`);
  }
  return {
    server,
    provider,
    as,
    async [Symbol.asyncDispose]() {
      await server[Symbol.asyncDispose]();
      await provider[Symbol.asyncDispose]();
    },
  };
}

export interface SseEvent {
  readonly event: string;
  readonly data: Record<string, unknown>;
}

/** Parses a whole Server-Sent Events body. */
export function parseSse(text: string): SseEvent[] {
  return text.split("\n\n").filter((b) => b.trim()).map((block) => {
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    return { event, data: JSON.parse(data.join("\n")) };
  });
}

/** Creates a conversation and returns its id. */
export async function newConversation(f: AiFixture, session: Session): Promise<string> {
  const r = await callJson(f.server, "POST", "/api/ai/conversations", { session, body: {} });
  if (r.status !== 201) throw new Error(`create conversation: ${r.status}`);
  return r.body.id as string;
}

/** Asks a question; the answer stream is read to its end. */
export async function ask(
  f: AiFixture,
  session: Session,
  conversationId: string,
  content: string,
): Promise<{ status: number; type: string; events: SseEvent[]; text: string }> {
  const res = await call(f.server, "POST", `/api/ai/conversations/${conversationId}/messages`, {
    session,
    body: { content },
  });
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    type,
    events: type.startsWith("text/event-stream") ? parseSse(text) : [],
    text,
  };
}

/** The streamed answer's text. */
export function answerText(events: readonly SseEvent[]): string {
  return events.filter((e) => e.event === "token").map((e) => e.data.text).join("");
}
