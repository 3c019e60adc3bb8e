/**
 * The documents of the protection controls as the API accepts and the store keeps them
 * (zod at the edge; `policy_objects.config` holds the parsed JSON). Checks that need the engine
 * (RE2 patterns, networks) are refinements here, so a bad value is refused at write time with
 * the engine's own message.
 */
import { z } from "zod";
import { validateAclConditions } from "../../engine/acl.ts";
import { patternRefusal } from "../../engine/custom_rules.ts";
import { parseCidr } from "../../engine/ip_address.ts";

const siteId = z.string().min(1).max(64).nullable().default(null);
const pathPrefix = z.string().startsWith("/", 'expected a path starting with "/"').max(1024);
const cidr = z.string().max(64).refine((v) => parseCidr(v) !== undefined, {
  message: "expected an IPv4 or IPv6 address or CIDR network, e.g. 203.0.113.0/24",
});
const isoTime = z.iso.datetime({ offset: true, message: "expected an ISO 8601 date-time" });
const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, "expected a header name")
  .transform((v) => v.toLowerCase());

/**
 * Adds RE2's message as a zod issue at `path` when `pattern` does not compile; the issue's
 * `params.reason` says why (`size` for a program over the limit, answered as
 * `PATTERN_TOO_LARGE`).
 */
function re2Issue(
  ctx: z.RefinementCtx,
  pattern: string,
  ignoreCase: boolean,
  path: string[],
): void {
  const r = patternRefusal(pattern, ignoreCase);
  if (r !== undefined) {
    ctx.addIssue({ code: "custom", message: r.message, path, params: { reason: r.reason } });
  }
}

export const ipEntrySchema = z.strictObject({
  action: z.enum(["allow", "block"]),
  cidr,
  site_id: siteId,
  path_prefix: pathPrefix.nullable().default(null),
  expires_at: isoTime.nullable().default(null),
  note: z.string().max(500).default(""),
});
export type IpEntryDoc = z.infer<typeof ipEntrySchema>;

const named = z.strictObject({
  name: headerName,
  pattern: z.string().min(1).max(2000).optional(),
});

export const aclConditionsSchema = z.strictObject({
  methods: z.array(z.string().regex(/^[A-Za-z]{1,16}$/).transform((m) => m.toUpperCase()))
    .min(1).optional(),
  path: z.union([
    z.strictObject({ prefix: pathPrefix }),
    z.strictObject({ regex: z.string().min(1).max(2000) }),
  ]).optional(),
  hosts: z.array(
    z.string().regex(/^(\*\.)?[A-Za-z0-9.-]{1,253}$/, "expected a host name or *.domain"),
  )
    .min(1).optional(),
  header: named.optional(),
  query: z.strictObject({
    name: z.string().min(1).max(256),
    pattern: z.string().min(1).max(2000).optional(),
  })
    .optional(),
  cidrs: z.array(cidr).min(1).optional(),
  countries: z.array(
    z.string().regex(/^[A-Za-z]{2}$/, "expected a two-letter country code")
      .transform((c) => c.toUpperCase()),
  ).min(1).optional(),
}).superRefine((c, ctx) => {
  const problem = validateAclConditions(c);
  if (problem) {
    ctx.addIssue({
      code: "custom",
      message: problem.message,
      path: problem.field.split(".").slice(1),
      ...(problem.reason === undefined ? {} : { params: { reason: problem.reason } }),
    });
  }
});

export const aclRuleSchema = z.strictObject({
  name: z.string().min(1).max(200),
  site_id: siteId,
  enabled: z.boolean().default(true),
  action: z.enum(["allow", "block", "challenge", "log"]),
  conditions: aclConditionsSchema,
  position: z.number().int().min(0).optional(),
});
export type AclRuleDoc = z.infer<typeof aclRuleSchema>;

export const customTargetSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("path") }),
  z.strictObject({ kind: z.literal("query") }),
  z.strictObject({ kind: z.literal("param"), name: z.string().min(1).max(256) }),
  z.strictObject({ kind: z.literal("any_param") }),
  z.strictObject({ kind: z.literal("header"), name: headerName }),
  z.strictObject({ kind: z.literal("cookies") }),
  z.strictObject({ kind: z.literal("body") }),
]);

export const customRuleSchema = z.strictObject({
  name: z.string().min(1).max(200),
  site_id: siteId,
  target: customTargetSchema,
  pattern: z.string().min(1).max(4000),
  ignore_case: z.boolean().default(false),
  action: z.enum(["block", "log", "challenge"]),
  priority: z.number().int().min(0).max(1_000_000).default(100),
  enabled: z.boolean().default(true),
}).superRefine((r, ctx) => re2Issue(ctx, r.pattern, r.ignore_case, ["pattern"]));
export type CustomRuleDoc = z.infer<typeof customRuleSchema>;

export const rateLimitSchema = z.strictObject({
  enabled: z.boolean().default(false),
  requests: z.number().int().min(1).max(1_000_000).default(600),
  window_seconds: z.number().int().min(1).max(86_400).default(60),
  burst: z.number().int().min(0).max(1_000_000).default(100),
  key: z.enum(["ip", "ip_site", "ip_site_path"]).default("ip"),
  max_keys: z.number().int().min(100).max(10_000_000).default(100_000),
});
export type RateLimitDoc = z.infer<typeof rateLimitSchema>;

export const botPolicySchema = z.strictObject({
  site_id: siteId,
  path_prefix: pathPrefix.default("/"),
  mode: z.enum(["off", "suspicious", "all"]),
  /** Clients over this many requests per window count as suspicious. */
  rate_threshold: z.strictObject({
    requests: z.number().int().min(1).max(1_000_000),
    window_seconds: z.number().int().min(1).max(3600),
  }).nullable().default(null),
  verified_bots: z.boolean().default(false),
  difficulty: z.number().int().min(1).max(24).default(16),
  clearance_minutes: z.number().int().min(1).max(10_080).default(60),
});
export type BotPolicyDoc = z.infer<typeof botPolicySchema>;

export const feedFormatSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("plain") }),
  z.strictObject({
    kind: z.literal("csv"),
    column: z.union([z.number().int().min(0).max(1000), z.string().min(1).max(200)]),
    delimiter: z.string().length(1).optional(),
  }),
  z.strictObject({ kind: z.literal("json"), field: z.string().min(1).max(200).optional() }),
]);

export const threatFeedSchema = z.strictObject({
  name: z.string().min(1).max(200),
  url: z.url({ protocol: /^https?$/, message: "expected an http or https URL" }).nullable().default(
    null,
  ),
  /** An uploaded list, used instead of a URL. */
  content: z.string().max(16 * 1024 * 1024).nullable().default(null),
  format: feedFormatSchema.default({ kind: "plain" }),
  action: z.enum(["block", "challenge", "log"]).default("block"),
  refresh_minutes: z.number().int().min(1).max(10_080).default(60),
  enabled: z.boolean().default(true),
}).refine((f) => (f.url === null) !== (f.content === null), {
  message: "expected exactly one of url or content",
  path: ["url"],
});
export type ThreatFeedDoc = z.infer<typeof threatFeedSchema>;

export const alapPolicySchema = z.strictObject({
  enabled: z.boolean().default(true),
  auto_apply: z.boolean().default(false),
  client_window_seconds: z.number().int().min(10).max(86_400).default(300),
  client_score_threshold: z.number().int().min(50).max(1_000_000).default(300),
  temp_block_minutes: z.number().int().min(1).max(43_200).default(60),
  global_sites: z.number().int().min(2).max(1000).default(2),
  ban_days: z.number().int().min(1).max(365).default(7),
  signature_window_minutes: z.number().int().min(1).max(10_080).default(60),
  signature_threshold: z.number().int().min(2).max(1_000_000).default(20),
  signature_block_days: z.number().int().min(1).max(365).default(30),
});
export type AlapPolicyDoc = z.infer<typeof alapPolicySchema>;

export const headerRuleSchema = z.strictObject({
  site_id: siteId,
  path_prefix: pathPrefix.default("/"),
  op: z.enum(["set", "add", "remove"]),
  name: headerName,
  value: z.string().max(4096).regex(/^[^\r\n]*$/, "expected a value without line breaks").default(
    "",
  ),
});
export type HeaderRuleDoc = z.infer<typeof headerRuleSchema>;

export const edgeSettingsSchema = z.strictObject({
  cache: z.strictObject({
    enabled: z.boolean().default(false),
    max_bytes: z.number().int().min(1024).max(4 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
    max_object_bytes: z.number().int().min(1).max(256 * 1024 * 1024).default(1024 * 1024),
    paths: z.array(z.strictObject({ site_id: siteId, path_prefix: pathPrefix })).default([]),
  }).prefault({}),
  compression: z.strictObject({
    gzip: z.boolean().default(false),
    brotli: z.boolean().default(false),
    min_bytes: z.number().int().min(0).max(1024 * 1024 * 1024).default(1024),
    types: z.array(z.string().min(1).max(200)).default([
      "text/",
      "application/json",
      "application/javascript",
      "application/xml",
      "image/svg+xml",
    ]),
  }).prefault({}),
});
export type EdgeSettingsDoc = z.infer<typeof edgeSettingsSchema>;

export const blockPageSchema = z.strictObject({
  template_id: z.string().min(1).max(64).default("minimal"),
  custom_enabled: z.boolean().default(false),
  custom_html: z.string().default(""),
});
export type BlockPageDoc = z.infer<typeof blockPageSchema>;

/** Parses a stored document, falling back to the schema's defaults for a damaged one. */
export function parseStored<S extends z.ZodType>(schema: S, json: string | undefined): z.infer<S> {
  if (json !== undefined) {
    try {
      const r = schema.safeParse(JSON.parse(json));
      if (r.success) return r.data;
    } catch {
      // fall through to the defaults
    }
  }
  return schema.parse({});
}
