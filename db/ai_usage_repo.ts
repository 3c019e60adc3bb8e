/** SQL for the AI assistant's token usage, one row per principal and UTC day (`ai_usage`). */
import type { Db } from "./store.ts";

export interface AiUsageRow {
  readonly owner: string;
  readonly owner_name: string;
  readonly day: string;
  readonly requests: number;
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
}

export function createAiUsageRepo(db: Db) {
  const add = db.prepare(
    `INSERT INTO ai_usage (owner, owner_name, day, requests, prompt_tokens, completion_tokens)
     VALUES (?, ?, ?, 1, ?, ?)
     ON CONFLICT(owner, day) DO UPDATE SET owner_name = excluded.owner_name,
       requests = requests + 1, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
       completion_tokens = completion_tokens + excluded.completion_tokens`,
  );
  const byOwner = db.prepare(
    "SELECT * FROM ai_usage WHERE owner = ? AND day >= ? ORDER BY day DESC",
  );
  const totals = db.prepare(
    `SELECT owner, MAX(owner_name) AS owner_name, SUM(requests) AS requests,
       SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens
     FROM ai_usage WHERE day >= ? GROUP BY owner ORDER BY owner`,
  );
  return {
    /** Counts one provider request and its tokens. */
    add(
      owner: { key: string; name: string },
      day: string,
      tokens: { prompt: number; completion: number },
    ): void {
      add.run(owner.key, owner.name, day, tokens.prompt, tokens.completion);
    },
    /** One principal's days since `fromDay` (`YYYY-MM-DD`), newest first. */
    days(owner: string, fromDay: string): AiUsageRow[] {
      return byOwner.all(owner, fromDay) as unknown as AiUsageRow[];
    },
    /** Every principal's totals since `fromDay`. */
    totals(fromDay: string): Omit<AiUsageRow, "day">[] {
      return totals.all(fromDay) as unknown as Omit<AiUsageRow, "day">[];
    },
  };
}

export type AiUsageRepo = ReturnType<typeof createAiUsageRepo>;
