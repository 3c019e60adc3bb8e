/**
 * The tools the assistant may call, as data: name, what it does, the permission the asking user
 * must hold, its risk, and its argument schema (zod; the JSON Schema the model sees is made
 * from it once). Read tools run at once; change tools only ever create an approval request.
 */
import { z } from "zod";

const TRACE_ID = z.string().regex(
  /^[0-9a-f]{32}$/,
  "expected a 32-character lower-case hex trace id",
);
const SITE = z.string().min(1).max(64).describe("Site name or id");
const PERIOD = {
  hours: z.number().int().min(1).max(720).optional()
    .describe("Look back this many hours from now (default 24); ignored when from is given"),
  from: z.iso.datetime({ offset: true }).optional().describe("Start of the period (ISO 8601)"),
  to: z.iso.datetime({ offset: true }).optional().describe("End of the period (default now)"),
  site: SITE.optional().describe("Only this site (name or id)"),
};

export const TOOL_ARGS = {
  explain_access_log: z.strictObject({ trace_id: TRACE_ID }),
  summarize_attacks: z.strictObject(PERIOD),
  top_attackers: z.strictObject({
    ...PERIOD,
    limit: z.number().int().min(1).max(50).optional().describe("How many of each (default 10)"),
  }),
  describe_site_protection: z.strictObject({ site: SITE }),
  lookup_ip: z.strictObject({
    ip: z.string().min(2).max(64).describe("IPv4 or IPv6 address"),
  }),
  list_api_inventory: z.strictObject({
    site: SITE.optional().describe("Only this site (name or id)"),
    method: z.string().regex(/^[A-Za-z]{1,16}$/).optional()
      .describe("Only endpoints seen with this HTTP method"),
    q: z.string().min(1).max(512).optional().describe("Only templates containing this text"),
    shadow: z.boolean().optional()
      .describe(
        "true: only endpoints no schema entry documents (shadow APIs); false: only documented ones",
      ),
    covered: z.boolean().optional()
      .describe(
        "true: only endpoints a validation schema or token rule covers; false: only uncovered ones",
      ),
    limit: z.number().int().min(1).max(50).optional().describe("How many (default 20)"),
  }),
  block_ip: z.strictObject({
    cidr: z.string().min(2).max(64).describe("Address or CIDR network to block"),
    site: SITE.optional().describe("Only on this site (default: every site)"),
    path_prefix: z.string().startsWith("/").max(1024).optional()
      .describe("Only for paths starting with this prefix"),
    expires_in_minutes: z.number().int().min(1).max(525_600).optional()
      .describe("Lift the block after this many minutes (default: never)"),
    reason: z.string().min(1).max(400).describe("Why, shown to the approver"),
  }),
  add_custom_rule: z.strictObject({
    name: z.string().min(1).max(200),
    site: SITE.optional().describe("Only on this site (default: every site)"),
    target: z.discriminatedUnion("kind", [
      z.strictObject({ kind: z.literal("path") }),
      z.strictObject({ kind: z.literal("query") }),
      z.strictObject({ kind: z.literal("param"), name: z.string().min(1).max(256) }),
      z.strictObject({ kind: z.literal("any_param") }),
      z.strictObject({ kind: z.literal("header"), name: z.string().min(1).max(128) }),
      z.strictObject({ kind: z.literal("cookies") }),
      z.strictObject({ kind: z.literal("body") }),
    ]).describe("Which part of the request the pattern is matched against"),
    pattern: z.string().min(1).max(4000).describe("RE2 regular expression"),
    ignore_case: z.boolean().optional(),
    action: z.enum(["block", "log", "challenge"]),
    reason: z.string().min(1).max(400).describe("Why, shown to the approver"),
  }),
  set_site_protection: z.strictObject({
    site: SITE,
    mode: z.enum(["block", "monitor", "off"]).optional(),
    level: z.enum(["low", "balanced", "strict"]).optional(),
    reason: z.string().min(1).max(400).describe("Why, shown to the approver"),
  }).refine((a) => a.mode !== undefined || a.level !== undefined, {
    message: "give mode, level or both",
  }),
  add_alap_exception: z.strictObject({
    trace_id: TRACE_ID.describe("Trace id of the logged block that was a false positive"),
    path_prefix: z.string().startsWith("/").max(1024).optional()
      .describe("Only for paths starting with this prefix"),
    reason: z.string().min(1).max(400).describe("Why, shown to the approver"),
  }),
} as const;

export type ToolName = keyof typeof TOOL_ARGS;
export type ToolArgs<N extends ToolName> = z.infer<(typeof TOOL_ARGS)[N]>;

export interface ToolSpec {
  readonly name: ToolName;
  readonly description: string;
  /** Held by the asking user (and, for a change, by its approver too). */
  readonly permission: string;
  /** `read`: runs at once; `change`: becomes an approval request, never runs directly. */
  readonly risk: "read" | "change";
}

export const TOOLS: readonly ToolSpec[] = [
  {
    name: "explain_access_log",
    description:
      "Fetch one access-log record by its trace id: the request, the verdict and the chain of checks that decided it.",
    permission: "read:logs",
    risk: "read",
  },
  {
    name: "summarize_attacks",
    description:
      "Count requests of a period by verdict (pass, block, challenge, log) and attack class.",
    permission: "read:logs",
    risk: "read",
  },
  {
    name: "top_attackers",
    description:
      "The client addresses and the paths behind the most hostile requests of a period (blocked, challenged, logged or carrying an attack class).",
    permission: "read:logs",
    risk: "read",
  },
  {
    name: "describe_site_protection",
    description:
      "A site's hosts, mode and level, and the IP list entries, ACL rules, custom rules and bot policies that apply to it.",
    permission: "read:sites",
    risk: "read",
  },
  {
    name: "lookup_ip",
    description:
      "Whether an address is listed by a threat-intelligence feed or matched by an IP allow/block list entry.",
    permission: "read:threat_intel",
    risk: "read",
  },
  {
    name: "list_api_inventory",
    description:
      "The API endpoints discovery has seen (path templates such as /users/{id}), busiest first: methods, sampled hit counts, status classes, parameter names, content types, first and last seen, whether a validation schema or token rule covers each, and shadow APIs (undocumented endpoints).",
    permission: "read:apisec",
    risk: "read",
  },
  {
    name: "block_ip",
    description:
      "Propose blocking an address or CIDR network. This never blocks directly: it creates an approval request that another administrator must approve.",
    permission: "write:protection",
    risk: "change",
  },
  {
    name: "add_custom_rule",
    description:
      "Propose a custom regex rule. This never adds it directly: it creates an approval request that another administrator must approve.",
    permission: "write:rules",
    risk: "change",
  },
  {
    name: "set_site_protection",
    description:
      "Propose changing a site's mode (block, monitor, off) or level (low, balanced, strict). This creates an approval request; nothing changes until another administrator approves it.",
    permission: "write:sites",
    risk: "change",
  },
  {
    name: "add_alap_exception",
    description:
      "Propose an ALAP exception for the rule behind a logged false-positive block. This creates an approval request; nothing changes until another administrator approves it.",
    permission: "write:protection",
    risk: "change",
  },
];

export const TOOL_NAMES: readonly ToolName[] = TOOLS.map((t) => t.name);

const BY_NAME: ReadonlyMap<string, ToolSpec> = new Map(TOOLS.map((t) => [t.name, t]));

export function toolSpec(name: string): ToolSpec | undefined {
  return BY_NAME.get(name);
}

/** Drops the long regular expressions zod adds beside a `format` (the model needs the format). */
function compact(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(compact);
  if (!schema || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  const o = schema as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    if (k === "pattern" && typeof o["format"] === "string") continue;
    out[k] = compact(v);
  }
  return out;
}

/** The function definitions in the chat-completions `tools` shape, built once. */
export const TOOL_DEFINITIONS: ReadonlyMap<ToolName, Readonly<Record<string, unknown>>> = new Map(
  TOOLS.map((t) => {
    const { $schema: _s, ...parameters } = z.toJSONSchema(TOOL_ARGS[t.name], {
      io: "input",
      unrepresentable: "any",
    }) as Record<string, unknown>;
    return [t.name, {
      type: "function",
      function: { name: t.name, description: t.description, parameters: compact(parameters) },
    }];
  }),
);
