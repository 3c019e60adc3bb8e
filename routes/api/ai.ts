/**
 * `/api/ai`: the assistant's configuration (`read:ai` / `write:ai`), conversations answered as
 * Server-Sent Events (`use:ai`), token usage, and the approval queue of high-risk tool calls
 * (`approve:ai`; approving or rejecting needs a signed-in user, not an API token).
 */
import { z } from "zod";
import { type AiConfig, aiConfigInputSchema } from "../../mod/ai/ai_config.ts";
import type { Approvals } from "../../mod/ai/approvals.ts";
import type { Assistant, AssistantEvent } from "../../mod/ai/assistant.ts";
import type { Conversations } from "../../mod/ai/conversations.ts";
import type { Asker } from "../../mod/ai/tools.ts";
import { AppError } from "../../mod/core/errors.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import type { Ctx, Principal } from "./env.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson, readQuery } from "./validate.ts";

export interface AiRouteDeps extends AuditSink {
  readonly config: AiConfig;
  readonly conversations: Conversations;
  readonly assistant: Assistant;
  readonly approvals: Approvals;
  /** The human behind a principal (`user:<id>`; a token's root creator). */
  readonly humanOf: (principal: Principal) => string;
}

const MAX_QUESTION = 8000;

const conversationSchema = z.strictObject({ title: z.string().max(200).optional() });
const messageSchema = z.strictObject({
  content: z.string().trim().min(1, "expected a question").max(
    MAX_QUESTION,
    `expected at most ${MAX_QUESTION} characters`,
  ),
});
const listQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
const approvalsQuery = z.strictObject({
  status: z.enum(["pending", "applying", "applied", "rejected", "failed"]).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
const rejectSchema = z.strictObject({ reason: z.string().max(1000).optional() });
const usageQuery = z.strictObject({
  days: z.coerce.number().int().min(1).max(366).default(30),
});

const encoder = new TextEncoder();

/** Streams assistant events as Server-Sent Events; the client going away aborts the answer. */
function sse(
  run: (emit: (e: AssistantEvent) => Promise<void>, signal: AbortSignal) => Promise<void>,
) {
  const abort = new AbortController();
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const emit = (e: AssistantEvent) => {
        if (!open) return Promise.resolve();
        const { type, ...data } = e;
        controller.enqueue(encoder.encode(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`));
        return Promise.resolve();
      };
      void run(emit, abort.signal).finally(() => {
        if (open) {
          open = false;
          controller.close();
        }
      });
    },
    cancel() {
      open = false;
      abort.abort();
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
}

/** The principal asking, as the assistant's tools see it. */
function askerOf(c: Ctx, deps: Pick<AiRouteDeps, "humanOf">): Asker {
  const p = c.get("principal")!;
  return {
    key: `${p.kind}:${p.id}`,
    name: p.name,
    permissions: p.permissions,
    human: deps.humanOf(p),
  };
}

/** Client address and trace id of the request, for audit records. */
function factsOf(c: Ctx) {
  return { clientIp: c.get("clientIp"), traceId: c.get("traceId") };
}

/** The assistant's provider settings and their connection test. */
function configRoutes(deps: AiRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/ai/config",
      access: perm("read:ai"),
      handler: (c) => c.json(deps.config.get()),
    },
    {
      method: "PUT",
      path: "/api/ai/config",
      access: perm("write:ai"),
      handler: async (c) =>
        c.json(
          await auditFailures(c, deps, { action: "ai.config.update", target: "ai" }, async () => {
            const input = await readJson(c, aiConfigInputSchema);
            return await deps.config.update(input, auditContext(c));
          }),
        ),
    },
    {
      method: "POST",
      path: "/api/ai/config/test",
      access: perm("write:ai"),
      handler: async (c) => {
        const record = (result: "success" | "failure", detail: Record<string, unknown>) =>
          deps.transaction(() =>
            deps.audit.record({
              ...auditContext(c),
              action: "ai.config.test",
              target: "ai",
              result,
              detail,
            })
          );
        try {
          const result = await deps.assistant.test(askerOf(c, deps));
          record("success", { model: result.model });
          return c.json(result);
        } catch (err) {
          if (err instanceof AppError) record("failure", { code: err.code });
          throw err;
        }
      },
    },
  ];
}

/** Token usage: the caller's own per day, and everyone's totals. */
function usageRoutes(deps: AiRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/ai/usage",
      access: perm("use:ai"),
      handler: (c) => {
        const { days } = readQuery(c, usageQuery);
        const me = askerOf(c, deps);
        const { since, rows } = deps.assistant.usageDays(me.key, days);
        const sum = (k: "requests" | "prompt_tokens" | "completion_tokens") =>
          rows.reduce((n, r) => n + r[k], 0);
        return c.json({
          principal: { id: me.key, name: me.name },
          since,
          totals: {
            requests: sum("requests"),
            prompt_tokens: sum("prompt_tokens"),
            completion_tokens: sum("completion_tokens"),
          },
          days: rows.map(({ owner: _o, owner_name: _n, ...r }) => r),
        });
      },
    },
    {
      method: "GET",
      path: "/api/ai/usage/users",
      access: perm("read:ai"),
      handler: (c) => {
        const { days } = readQuery(c, usageQuery);
        const { since, rows } = deps.assistant.usageTotals(days);
        const items = rows.map((r) => ({
          principal: { id: r.owner, name: r.owner_name },
          requests: r.requests,
          prompt_tokens: r.prompt_tokens,
          completion_tokens: r.completion_tokens,
        }));
        return c.json({ since, items });
      },
    },
  ];
}

/** The caller's conversations and the questions asked in them (answers stream as events). */
function conversationRoutes(deps: AiRouteDeps): RouteDef[] {
  return [
    {
      method: "POST",
      path: "/api/ai/conversations",
      access: perm("use:ai"),
      handler: async (c) => {
        const { title } = await readJson(c, conversationSchema);
        return c.json(deps.conversations.create(askerOf(c, deps).key, title), 201);
      },
    },
    {
      method: "GET",
      path: "/api/ai/conversations",
      access: perm("use:ai"),
      handler: (c) => {
        const { limit } = readQuery(c, listQuery);
        return c.json({ items: deps.conversations.list(askerOf(c, deps).key, limit) });
      },
    },
    {
      method: "GET",
      path: "/api/ai/conversations/:id",
      access: perm("use:ai"),
      handler: (c) => c.json(deps.conversations.get(c.req.param("id") ?? "", askerOf(c, deps).key)),
    },
    {
      method: "DELETE",
      path: "/api/ai/conversations/:id",
      access: perm("use:ai"),
      handler: (c) => {
        deps.conversations.remove(c.req.param("id") ?? "", askerOf(c, deps).key);
        return c.body(null, 204);
      },
    },
    {
      method: "POST",
      path: "/api/ai/conversations/:id/messages",
      access: perm("use:ai"),
      handler: async (c) => {
        const { content } = await readJson(c, messageSchema);
        const who = askerOf(c, deps);
        const conversationId = c.req.param("id") ?? "";
        const base = { asker: who, conversationId, content, facts: factsOf(c) };
        const messageId = await deps.assistant.begin(base);
        return sse(async (emit, signal) => {
          await emit({ type: "start", conversation_id: conversationId, message_id: messageId });
          await deps.assistant.answer({ ...base, emit, signal });
        });
      },
    },
  ];
}

/** The queue of high-risk changes the assistant proposed, for another user to decide. */
function approvalRoutes(deps: AiRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/ai/approvals",
      access: perm("approve:ai"),
      handler: (c) => {
        const q = readQuery(c, approvalsQuery);
        return c.json({ items: deps.approvals.list(q.status, q.limit) });
      },
    },
    {
      method: "GET",
      path: "/api/ai/approvals/:id",
      access: perm("approve:ai"),
      handler: (c) => c.json(deps.approvals.get(c.req.param("id") ?? "")),
    },
    {
      method: "POST",
      path: "/api/ai/approvals/:id/approve",
      access: perm("approve:ai", { sessionOnly: true }),
      handler: async (c) =>
        c.json(await deps.approvals.approve(c.req.param("id") ?? "", askerOf(c, deps), factsOf(c))),
    },
    {
      method: "POST",
      path: "/api/ai/approvals/:id/reject",
      access: perm("approve:ai", { sessionOnly: true }),
      handler: async (c) => {
        const { reason } = await readJson(c, rejectSchema);
        return c.json(
          deps.approvals.reject(c.req.param("id") ?? "", askerOf(c, deps), reason, factsOf(c)),
        );
      },
    },
  ];
}

export function aiRoutes(deps: AiRouteDeps): RouteDef[] {
  return [
    ...configRoutes(deps),
    ...usageRoutes(deps),
    ...conversationRoutes(deps),
    ...approvalRoutes(deps),
  ];
}
