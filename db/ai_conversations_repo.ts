/** SQL for the AI assistant's conversations and their messages (`ai_conversations`, `ai_messages`). */
import type { Db } from "./store.ts";

export interface AiConversationRow {
  readonly id: string;
  /** The principal the conversation belongs to: `user:<id>` or `token:<id>`. */
  readonly owner: string;
  readonly title: string;
  readonly created_at: number;
  readonly updated_at: number;
}

export interface AiMessageRow {
  readonly id: number;
  readonly conversation_id: string;
  readonly role: "user" | "assistant" | "tool";
  readonly content: string;
  /** JSON array of the assistant's tool calls, in the chat-completions shape. */
  readonly tool_calls: string | null;
  readonly tool_call_id: string | null;
  readonly tool_name: string | null;
  readonly created_at: number;
}

export type NewAiMessage = Omit<AiMessageRow, "id">;

export function createAiConversationsRepo(db: Db) {
  const insert = db.prepare(
    "INSERT INTO ai_conversations (id, owner, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
  );
  const get = db.prepare("SELECT * FROM ai_conversations WHERE id = ? AND owner = ?");
  const list = db.prepare(
    "SELECT * FROM ai_conversations WHERE owner = ? ORDER BY updated_at DESC, id LIMIT ?",
  );
  const touch = db.prepare("UPDATE ai_conversations SET updated_at = ? WHERE id = ?");
  const rename = db.prepare("UPDATE ai_conversations SET title = ? WHERE id = ?");
  const del = db.prepare("DELETE FROM ai_conversations WHERE id = ? AND owner = ?");
  const addMessage = db.prepare(
    `INSERT INTO ai_messages
       (conversation_id, role, content, tool_calls, tool_call_id, tool_name, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const messages = db.prepare("SELECT * FROM ai_messages WHERE conversation_id = ? ORDER BY id");
  const countMessages = db.prepare(
    "SELECT COUNT(*) AS n FROM ai_messages WHERE conversation_id = ?",
  );
  return {
    insert(row: AiConversationRow): void {
      insert.run(row.id, row.owner, row.title, row.created_at, row.updated_at);
    },
    /** The conversation when it exists and belongs to `owner`. */
    get(id: string, owner: string): AiConversationRow | undefined {
      return get.get(id, owner) as AiConversationRow | undefined;
    },
    /** Newest activity first. */
    list(owner: string, limit: number): AiConversationRow[] {
      return list.all(owner, limit) as unknown as AiConversationRow[];
    },
    touch(id: string, now: number): void {
      touch.run(now, id);
    },
    rename(id: string, title: string): void {
      rename.run(title, id);
    },
    /** Deletes the conversation (and, by cascade, its messages); false when not `owner`'s. */
    delete(id: string, owner: string): boolean {
      return Number(del.run(id, owner).changes) > 0;
    },
    addMessage(m: NewAiMessage): number {
      return Number(
        addMessage.run(
          m.conversation_id,
          m.role,
          m.content,
          m.tool_calls,
          m.tool_call_id,
          m.tool_name,
          m.created_at,
        ).lastInsertRowid,
      );
    },
    messages(conversationId: string): AiMessageRow[] {
      return messages.all(conversationId) as unknown as AiMessageRow[];
    },
    messageCount(conversationId: string): number {
      return (countMessages.get(conversationId) as { n: number }).n;
    },
  };
}

export type AiConversationsRepo = ReturnType<typeof createAiConversationsRepo>;
