/**
 * The assistant's configuration (one settings row, `ai`): whether it is enabled, the
 * OpenAI-compatible provider, model, limits and allowed tools. The API key is sealed with the
 * data directory's key (like TOTP secrets) and never returned: reads show a masked hint. It is
 * disabled by default, and nothing is sent anywhere until an administrator enables it.
 */
import { z } from "zod";
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { Audit, AuditEvent } from "../core/audit.ts";
import type { Clock } from "../core/clock.ts";
import { AppError, badRequest } from "../core/errors.ts";
import type { SecretBox } from "../core/secret_box.ts";
import { TOOL_NAMES, type ToolName } from "./tool_catalog.ts";

type AuditContext = Pick<AuditEvent, "actor" | "clientIp" | "traceId">;

const SETTINGS_KEY = "ai";
/** Additional data binding the sealed key to its purpose. */
const KEY_OWNER = "ai.api_key";
const MASK = "****";

const baseUrl = z.string().max(2000).refine((v) => {
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && u.username === "" &&
      u.password === "" && u.hash === "";
  } catch {
    return false;
  }
}, {
  message:
    'expected the http(s) base URL of an OpenAI-compatible API such as "https://api.openai.com/v1" (no credentials)',
});

const toolList = z.array(z.enum(TOOL_NAMES as [ToolName, ...ToolName[]])).max(TOOL_NAMES.length)
  .refine((t) => new Set(t).size === t.length, { message: "lists a tool twice" });

/** `PUT /api/ai/config`: every field optional; omitted fields keep their value. */
export const aiConfigInputSchema = z.strictObject({
  enabled: z.boolean().optional(),
  base_url: z.union([baseUrl, z.literal("")]).optional(),
  model: z.string().max(200).regex(/^[^\s]*$/, "expected a model name without spaces").optional(),
  /** A new key; `null` or "" removes it; omit to keep the stored one. */
  api_key: z.string().max(4096).refine((v) => !v.startsWith(MASK), {
    message: "looks like the masked hint, not a key: omit api_key to keep the stored one",
  }).nullable().optional(),
  timeout_ms: z.number().int().min(1000).max(600_000).optional(),
  max_tokens: z.number().int().min(16).max(131_072).optional(),
  tools: toolList.optional(),
});
export type AiConfigInput = z.infer<typeof aiConfigInputSchema>;

interface Stored {
  readonly enabled: boolean;
  readonly base_url: string;
  readonly model: string;
  readonly api_key_sealed: string | null;
  readonly api_key_hint: string | null;
  readonly timeout_ms: number;
  readonly max_tokens: number;
  readonly tools: readonly ToolName[];
}

const DEFAULTS: Stored = {
  enabled: false,
  base_url: "",
  model: "",
  api_key_sealed: null,
  api_key_hint: null,
  timeout_ms: 60_000,
  max_tokens: 1024,
  tools: TOOL_NAMES,
};

/** What `GET /api/ai/config` answers. */
export interface AiConfigView {
  readonly enabled: boolean;
  readonly base_url: string;
  readonly model: string;
  /** A masked hint such as `****wxyz`, or null when no key is stored. */
  readonly api_key: string | null;
  readonly api_key_set: boolean;
  readonly timeout_ms: number;
  readonly max_tokens: number;
  readonly tools: readonly ToolName[];
  readonly available_tools: readonly ToolName[];
}

/** What the client needs to call the provider. */
export interface ProviderSettings {
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey: string | undefined;
  readonly timeoutMs: number;
  readonly maxTokens: number;
  readonly tools: readonly ToolName[];
}

function hint(key: string): string {
  return key.length >= 12 ? `${MASK}${key.slice(-4)}` : MASK;
}

export interface AiConfigDeps {
  readonly settings: SettingsRepo;
  readonly box: SecretBox;
  readonly audit: Audit;
  readonly clock: Clock;
  readonly transaction: <T>(fn: () => T) => T;
}

export function createAiConfig(deps: AiConfigDeps) {
  const stored = (): Stored => ({
    ...DEFAULTS,
    ...(deps.settings.get(SETTINGS_KEY) as Partial<Stored> | undefined),
  });
  const view = (s: Stored): AiConfigView => ({
    enabled: s.enabled,
    base_url: s.base_url,
    model: s.model,
    api_key: s.api_key_hint,
    api_key_set: s.api_key_sealed !== null,
    timeout_ms: s.timeout_ms,
    max_tokens: s.max_tokens,
    tools: s.tools,
    available_tools: TOOL_NAMES,
  });

  return {
    get(): AiConfigView {
      return view(stored());
    },
    enabled(): boolean {
      return stored().enabled;
    },

    /** Merges `input` into the stored configuration; audited without the key. */
    async update(input: AiConfigInput, ctx: AuditContext): Promise<AiConfigView> {
      const before = stored();
      let sealed = before.api_key_sealed;
      let keyHint = before.api_key_hint;
      if (input.api_key === null || input.api_key === "") {
        sealed = null;
        keyHint = null;
      } else if (input.api_key !== undefined) {
        sealed = await deps.box.seal(new TextEncoder().encode(input.api_key), KEY_OWNER);
        keyHint = hint(input.api_key);
      }
      const next: Stored = {
        enabled: input.enabled ?? before.enabled,
        base_url: input.base_url ?? before.base_url,
        model: input.model ?? before.model,
        api_key_sealed: sealed,
        api_key_hint: keyHint,
        timeout_ms: input.timeout_ms ?? before.timeout_ms,
        max_tokens: input.max_tokens ?? before.max_tokens,
        tools: input.tools ?? before.tools,
      };
      if (next.enabled && next.base_url === "") {
        throw badRequest('Invalid field "base_url": required to enable the assistant', "base_url");
      }
      if (next.enabled && next.model === "") {
        throw badRequest('Invalid field "model": required to enable the assistant', "model");
      }
      const changed = Object.keys(input).filter((k) => k !== "api_key");
      deps.transaction(() => {
        deps.settings.set(SETTINGS_KEY, next, deps.clock.now());
        deps.audit.record({
          ...ctx,
          action: "ai.config.update",
          target: "ai",
          result: "success",
          detail: {
            changed,
            enabled: next.enabled,
            base_url: next.base_url,
            model: next.model,
            api_key: input.api_key === undefined
              ? "kept"
              : input.api_key === null || input.api_key === ""
              ? "removed"
              : "replaced",
          },
        });
      });
      return view(next);
    },

    /** The provider settings with the key opened; refuses while disabled or incomplete. */
    async provider(): Promise<ProviderSettings> {
      const s = stored();
      if (!s.enabled) {
        throw new AppError(
          409,
          "AI_DISABLED",
          "The AI assistant is disabled: an administrator enables it with PUT /api/ai/config",
        );
      }
      let apiKey: string | undefined;
      if (s.api_key_sealed !== null) {
        try {
          apiKey = new TextDecoder().decode(await deps.box.open(s.api_key_sealed, KEY_OWNER));
        } catch (err) {
          throw new AppError(
            500,
            "AI_KEY_UNREADABLE",
            "The stored AI API key cannot be opened (the data directory's key changed): set api_key again",
            { cause: err },
          );
        }
      }
      return {
        baseUrl: s.base_url,
        model: s.model,
        apiKey,
        timeoutMs: s.timeout_ms,
        maxTokens: s.max_tokens,
        tools: s.tools,
      };
    },
  };
}

export type AiConfig = ReturnType<typeof createAiConfig>;
