/**
 * Composes the AI assistant: its configuration (API key sealed with the data directory's key),
 * the chat-completions client, conversations, tools over the data plane's own services, the
 * approval queue, and the `/api/ai` routes.
 */
import { createAiApprovalsRepo } from "../db/ai_approvals_repo.ts";
import { createAiConversationsRepo } from "../db/ai_conversations_repo.ts";
import { createAiUsageRepo } from "../db/ai_usage_repo.ts";
import { createApiTokensRepo } from "../db/api_tokens_repo.ts";
import { createSettingsRepo } from "../db/settings_repo.ts";
import { type Db, transaction } from "../db/store.ts";
import { type AiConfig, createAiConfig } from "../mod/ai/ai_config.ts";
import { type Approvals, type ApprovalView, createApprovals } from "../mod/ai/approvals.ts";
import { createAssistant } from "../mod/ai/assistant.ts";
import { changeTools } from "../mod/ai/change_tools.ts";
import { createChatClient } from "../mod/ai/chat_client.ts";
import { createConversations } from "../mod/ai/conversations.ts";
import { readTools } from "../mod/ai/read_tools.ts";
import { createToolRunner } from "../mod/ai/tool_runner.ts";
import type { Audit } from "../mod/core/audit.ts";
import type { Clock } from "../mod/core/clock.ts";
import type { Logger } from "../mod/core/logger.ts";
import type { Notify } from "../mod/core/notifications.ts";
import type { Random } from "../mod/core/random.ts";
import { createSecretBox } from "../mod/core/secret_box.ts";
import type { DeploymentKeys } from "../mod/core/deployment_keys.ts";
import { aiRoutes } from "../routes/api/ai.ts";
import type { Principal } from "../routes/api/env.ts";
import type { RouteDef } from "../routes/api/route.ts";
import type { DataPlane } from "./data_plane.ts";

export interface AiPlane {
  readonly config: AiConfig;
  readonly approvals: Approvals;
  readonly routes: readonly RouteDef[];
}

export interface AiDeps {
  readonly db: Db;
  /** The process's one audit trail. */
  readonly audit: Audit;
  readonly dataDir: string;
  /** The deployment's sealing and signing keys, resolved once at start-up. */
  readonly keys: DeploymentKeys;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly dataPlane: DataPlane;
  /** Publishes an `ai.approval` realtime event. */
  readonly publish?: (payload: Readonly<Record<string, unknown>>) => void;
  /** Raises the `ai.approval` notification for a new request (inbox and channels). */
  readonly notify?: Notify;
}

/** What the realtime feed and the notification carry of a request (the change stays in the API). */
function approvalEvent(a: ApprovalView) {
  return {
    id: a.id,
    status: a.status,
    tool: a.tool,
    permission: a.permission,
    summary: a.summary,
    conversation_id: a.conversation_id,
    requested_by: a.requested_by.name,
    requested_at: a.requested_at,
    decided_by: a.decided_by?.name ?? null,
    decided_at: a.decided_at,
  };
}

/** Tokens minted by tokens: the depth past which a chain is not followed (as in api_tokens). */
const MAX_CHAIN = 8;

export function createAiPlane(deps: AiDeps): AiPlane {
  const { db, audit, clock, random } = deps;
  const tx = <T>(fn: () => T) => transaction(db, fn);
  const tokens = createApiTokensRepo(db);
  const config = createAiConfig({
    settings: createSettingsRepo(db),
    box: createSecretBox(deps.keys.sealing, random),
    audit,
    clock,
    transaction: tx,
  });
  const { sites, accessLog, protection, policy, apisec } = deps.dataPlane;
  const services = {
    clock,
    accessLog,
    sites,
    objects: protection.objects,
    alap: protection.alap,
    protection: () => policy.current.protection,
    apisec: apisec.source,
  };
  const changes = changeTools(services);
  const approvals = createApprovals({
    repo: createAiApprovalsRepo(db),
    audit,
    clock,
    random,
    transaction: tx,
    apply: changes.apply,
    changed: (a) => {
      const event = approvalEvent(a);
      deps.publish?.(event);
      if (a.status !== "pending") return;
      deps.notify?.({
        level: "info",
        kind: "ai.approval",
        title: `AI assistant change awaits approval (${a.tool})`,
        body: `${a.requested_by.name} asked the AI assistant for a change that needs another ` +
          `user's approval (approve:ai and ${a.permission}): ${a.summary}`,
        data: event,
        params: {
          id: a.id,
          tool: a.tool,
          permission: a.permission,
          summary: a.summary,
          by: a.requested_by.name,
        },
        link: "/console/ai-approvals",
      });
    },
  });
  const conversations = createConversations({
    repo: createAiConversationsRepo(db),
    clock,
    random,
    transaction: tx,
  });
  const usage = createAiUsageRepo(db);
  const assistant = createAssistant({
    config,
    client: createChatClient(),
    conversations,
    tools: createToolRunner({
      reads: readTools(services),
      changes,
      approvals,
      logger: deps.logger,
    }),
    usage,
    clock,
    logger: deps.logger,
  });

  /** The user behind a principal: a token's creator chain is followed to its root user. */
  const humanOf = (p: Principal): string => {
    let key = `${p.kind}:${p.id}`;
    for (let depth = 0; key.startsWith("token:") && depth <= MAX_CHAIN; depth++) {
      const row = tokens.get(key.slice("token:".length));
      if (!row) break;
      key = row.created_by;
    }
    return key;
  };

  return {
    config,
    approvals,
    routes: aiRoutes({
      audit,
      transaction: tx,
      config,
      conversations,
      assistant,
      approvals,
      humanOf,
    }),
  };
}
