/**
 * Conversations and their messages, each belonging to one principal: another principal's
 * conversation does not exist for them (404, never 403, so ids are not confirmed).
 */
import type {
  AiConversationRow,
  AiConversationsRepo,
  AiMessageRow,
  NewAiMessage,
} from "../../db/ai_conversations_repo.ts";
import type { Clock } from "../core/clock.ts";
import { AppError } from "../core/errors.ts";
import { type Random, randomHex } from "../core/random.ts";

export const DEFAULT_TITLE = "New conversation";
const TITLE_CHARS = 80;

export interface ConversationView {
  readonly id: string;
  readonly title: string;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface MessageView {
  readonly id: number;
  readonly role: AiMessageRow["role"];
  readonly content: string;
  readonly tool_calls?: unknown;
  readonly tool_call_id?: string;
  readonly tool_name?: string;
  readonly created_at: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

function view(row: AiConversationRow): ConversationView {
  return {
    id: row.id,
    title: row.title,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function messageView(m: AiMessageRow): MessageView {
  return {
    id: m.id,
    role: m.role,
    content: m.content,
    ...(m.tool_calls ? { tool_calls: JSON.parse(m.tool_calls) } : {}),
    ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
    ...(m.tool_name ? { tool_name: m.tool_name } : {}),
    created_at: iso(m.created_at),
  };
}

/** A title from the first line of a message. */
export function titleFrom(content: string): string {
  const line = content.trim().split("\n", 1)[0]!.replace(/\s+/g, " ");
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 3)}...` : line || DEFAULT_TITLE;
}

export interface ConversationsDeps {
  readonly repo: AiConversationsRepo;
  readonly clock: Clock;
  readonly random: Random;
  readonly transaction: <T>(fn: () => T) => T;
}

export function createConversations(deps: ConversationsDeps) {
  const { repo, clock } = deps;

  function own(id: string, owner: string): AiConversationRow {
    const row = repo.get(id, owner);
    if (!row) throw new AppError(404, "NOT_FOUND", `No conversation "${id}"`);
    return row;
  }

  return {
    create(owner: string, title: string | undefined): ConversationView {
      const now = clock.now();
      const row: AiConversationRow = {
        id: `conv_${randomHex(deps.random, 10)}`,
        owner,
        title: title?.trim() ? titleFrom(title) : DEFAULT_TITLE,
        created_at: now,
        updated_at: now,
      };
      repo.insert(row);
      return view(row);
    },
    list(owner: string, limit: number): ConversationView[] {
      return repo.list(owner, limit).map(view);
    },
    get(id: string, owner: string): ConversationView & { messages: MessageView[] } {
      const row = own(id, owner);
      return { ...view(row), messages: repo.messages(id).map(messageView) };
    },
    /** Throws 404 unless `owner` holds the conversation. */
    require(id: string, owner: string): ConversationView {
      return view(own(id, owner));
    },
    remove(id: string, owner: string): void {
      if (!repo.delete(id, owner)) throw new AppError(404, "NOT_FOUND", `No conversation "${id}"`);
    },
    /** The stored messages in order (for the prompt). */
    messages(id: string): AiMessageRow[] {
      return repo.messages(id);
    },
    /** Appends a message and marks the conversation active; names it after its first question. */
    append(owner: string, message: Omit<NewAiMessage, "created_at">): number {
      const now = clock.now();
      const convId = message.conversation_id;
      return deps.transaction(() => {
        const conv = own(convId, owner);
        const id = repo.addMessage({ ...message, created_at: now });
        repo.touch(convId, now);
        if (
          message.role === "user" && conv.title === DEFAULT_TITLE && repo.messageCount(convId) === 1
        ) {
          repo.rename(convId, titleFrom(message.content));
        }
        return id;
      });
    },
  };
}

export type Conversations = ReturnType<typeof createConversations>;
