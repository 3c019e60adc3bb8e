/**
 * The `apisec` blocks of the specification (section 2.7) as the API accepts and the store keeps
 * them, key for key: `discovery`, `validation` (schema entries), `auth` (JWT verification at the proxy) and
 * `rate_limits` (route-level limits). The
 * same schema checks the blocks in `waf.yaml`, so a file written from the specification passes
 * `waf config check`. Regular expressions are compiled with RE2 at write time, so a bad pattern is
 * refused with RE2's own message. Beyond the specification every entry may name a `site_id`
 * (null: every site).
 */
import { z } from "zod";
import { patternRefusal } from "../../engine/custom_rules.ts";
import { DURATION_HELP } from "../core/duration.ts";
import { compileBodySchema } from "./json_schema.ts";

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "*"] as const;

/** An HTTP method (case-insensitive on input) or `*` for every method. */
const method = z.string().transform((m) => m.toUpperCase()).pipe(
  z.enum(METHODS, { error: `expected an HTTP method (${METHODS.join(", ")})` }),
);

const entryId = z.string().regex(
  /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
  "expected an id of 1 to 64 ASCII letters, digits, '.', '_' or '-'",
);

const pathPattern = z.string().min(1).max(2000).superRefine((pattern, ctx) => {
  const r = patternRefusal(pattern, false);
  if (r !== undefined) {
    ctx.addIssue({ code: "custom", message: r.message, params: { reason: r.reason } });
  }
});

const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, "expected a header name")
  .transform((v) => v.toLowerCase());

const siteId = z.string().min(1).max(64).nullable().default(null);

/** `10s`, `1m`, `1h`, `1d` (a whole number and a unit). */
export const apisecDuration = z.string({ error: `expected a duration: ${DURATION_HELP}` }).regex(
  /^[1-9]\d{0,8}(ms|s|m|h|d)$/,
  { error: (issue) => `expected a duration: ${DURATION_HELP}; got ${JSON.stringify(issue.input)}` },
);

/** Entries must have distinct ids (they name the rule in the access log and the API). */
function uniqueIds(entries: ReadonlyArray<{ id: string }>, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  entries.forEach((e, i) => {
    if (seen.has(e.id)) {
      ctx.addIssue({ code: "custom", message: `duplicate id "${e.id}"`, path: [i, "id"] });
    }
    seen.add(e.id);
  });
}

export const discoverySchema = z.strictObject({
  enabled: z.boolean().default(false),
  /** Requests sampled per one-minute window (all sites together). */
  sample_limit: z.number().int().min(1).max(1_000_000).default(1000),
  /** `/static/` (a path prefix) or `*.css` (a path suffix): paths discovery skips. */
  ignore_prefixes: z.array(
    z.string().min(1).max(512).regex(
      /^(\/|\*)/,
      'expected a path prefix ("/static/") or a suffix pattern ("*.css")',
    ),
  ).max(200).default([
    "/static/",
    "/assets/",
    "*.css",
    "*.js",
    "*.png",
    "*.jpg",
    "*.svg",
    "*.ico",
    "*.woff2",
  ]),
});
export type DiscoveryDoc = z.infer<typeof discoverySchema>;

export const schemaEntrySchema = z.strictObject({
  id: entryId,
  method,
  /** A regular expression on the decoded path (RE2), e.g. `^/api/users/[0-9]+$`. */
  path_pattern: pathPattern,
  /** Names that must appear in the query or in the body (form fields, top-level JSON keys). */
  required_params: z.array(z.string().min(1).max(256)).max(100).default([]),
  required_headers: z.array(headerName).max(100).default([]),
  /** 0: no limit beyond the site's own. */
  max_body_bytes: z.number().int().min(0).max(1 << 30).default(0),
  enabled: z.boolean().default(true),
  site_id: siteId,
  /** A JSON Schema for a JSON request body (filled by the OpenAPI import); null: none. */
  body_schema: z.record(z.string(), z.unknown()).nullable().default(null).superRefine((s, ctx) => {
    if (s === null) return;
    const r = compileBodySchema(s);
    if (!r.ok) ctx.addIssue({ code: "custom", message: `invalid JSON Schema: ${r.message}` });
  }),
});
export type SchemaEntry = z.infer<typeof schemaEntrySchema>;

export const validationSchema = z.strictObject({
  enabled: z.boolean().default(false),
  schemas: z.array(schemaEntrySchema).max(2000).default([]).superRefine(uniqueIds),
});
export type ValidationDoc = z.infer<typeof validationSchema>;

export const routeLimitSchema = z.strictObject({
  id: entryId,
  method,
  path_pattern: pathPattern,
  requests: z.number().int().min(1).max(10_000_000),
  /** A duration such as `1m`. */
  window: apisecDuration,
  enabled: z.boolean().default(true),
  site_id: siteId,
});
export type RouteLimitDoc = z.infer<typeof routeLimitSchema>;

export const rateLimitsSchema = z.array(routeLimitSchema).max(1000).superRefine(uniqueIds);

/** Algorithms a token may be signed with; `none` is never one of them. */
export const JWT_ALGORITHMS = [
  "HS256",
  "HS384",
  "HS512",
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
] as const;
export type JwtAlgorithm = typeof JWT_ALGORITHMS[number];

export const isHmac = (alg: string): boolean => alg.startsWith("HS");

/** A route that needs a valid bearer token: method and path pattern, per site. */
export const authRouteSchema = z.strictObject({
  id: entryId,
  method,
  path_pattern: pathPattern,
  enabled: z.boolean().default(true),
  site_id: siteId,
});
export type AuthRouteDoc = z.infer<typeof authRouteSchema>;

const optionalText = (max: number) => z.string().min(1).max(max).nullable().default(null);
const pemText = z.string().max(65_536).refine((v) => /-----BEGIN [A-Z ]+-----/.test(v), {
  message: 'expected a PEM "PUBLIC KEY" or "CERTIFICATE"',
}).nullable().default(null);

const authBase = {
  enabled: z.boolean().default(false),
  /** The expected `iss`; null: not checked. */
  issuer: optionalText(2048),
  /** Accepted `aud` values (one must be in the token); empty: not checked. */
  audience: z.union([
    z.string().min(1).max(2048).transform((a) => [a]),
    z.array(z.string().min(1).max(2048)).max(50),
  ])
    .default([]),
  algorithms: z.array(
    z.enum(JWT_ALGORITHMS, {
      error: `expected one of ${JWT_ALGORITHMS.join(", ")} ("none" is never accepted)`,
    }),
  ).min(1).max(JWT_ALGORITHMS.length).default(["RS256", "ES256", "EdDSA"]),
  /** Tolerance for `exp` and `nbf`. */
  clock_skew: apisecDuration.default("30s"),
  /**
   * A token must carry `exp` (refused as `missing_exp` otherwise): a token that never expires
   * is valid for ever once leaked. `false` accepts tokens without one.
   */
  require_exp: z.boolean().default(true),
  /** Local PEM certificate or public key file. */
  pem_file: optionalText(4096),
  /** Inline PEM certificate or public key. */
  pem: pemText,
  /** Local JWKS file. */
  jwks_file: optionalText(4096),
  /** Remote JWKS (https, or http for a loopback or internal issuer). */
  jwks_url: z.string().max(2048).regex(/^https?:\/\/[^\s]+$/, "expected an http(s) URL")
    .nullable().default(null),
  /** Where the last good remote key set is kept, so a restart works while the issuer is down. */
  jwks_cache_file: optionalText(4096),
  jwks_refresh_interval: apisecDuration.default("10m"),
  routes: z.array(authRouteSchema).max(1000).default([]).superRefine(uniqueIds),
};

/** `auth` as the API and `waf.yaml` give it: `secret` is write-only (omitted: keep the stored one). */
export const authInputSchema = z.strictObject({
  ...authBase,
  /** HMAC shared secret (HS algorithms); "" clears it. */
  secret: z.string().max(4096).optional(),
  /** Read-only (what GET answers); ignored on input so a read document can be written back. */
  secret_set: z.boolean().optional(),
});
export type AuthInput = z.infer<typeof authInputSchema>;

/** `auth` as the store keeps it: the secret sealed. */
export const authStoredSchema = z.strictObject({
  ...authBase,
  secret_sealed: z.string().nullable().default(null),
});
export type AuthDoc = z.infer<typeof authStoredSchema>;

/** What makes an `auth` block unusable, as field and message (empty: usable). */
export function authProblems(
  a: Pick<AuthDoc, "enabled" | "algorithms" | "pem" | "pem_file" | "jwks_file" | "jwks_url">,
  hasSecret: boolean,
): Array<{ field: string; message: string }> {
  if (!a.enabled) return [];
  const out: Array<{ field: string; message: string }> = [];
  if (a.algorithms.some(isHmac) && !hasSecret) {
    out.push({
      field: "secret",
      message: "an HS algorithm is allowed but no shared secret is set",
    });
  }
  const asymmetric = a.pem !== null || a.pem_file !== null || a.jwks_file !== null ||
    a.jwks_url !== null;
  if (a.algorithms.some((alg) => !isHmac(alg)) && !asymmetric) {
    out.push({
      field: "algorithms",
      message:
        "an RSA, EC or EdDSA algorithm is allowed but no pem, pem_file, jwks_file or jwks_url is set",
    });
  }
  return out;
}

/** The blocks the API manages (`GET`/`PUT /api/apisec/config`). */
export const apisecConfigSchema = z.strictObject({
  discovery: discoverySchema.prefault({}),
  validation: validationSchema.prefault({}),
  auth: authInputSchema.prefault({}),
  rate_limits: rateLimitsSchema.default([]),
});
export type ApiSecConfigInput = z.infer<typeof apisecConfigSchema>;

/** The same blocks as the store keeps them. */
export const apisecStoredSchema = z.strictObject({
  discovery: discoverySchema.prefault({}),
  validation: validationSchema.prefault({}),
  auth: authStoredSchema.prefault({}),
  rate_limits: rateLimitsSchema.default([]),
});
export type ApiSecConfigDoc = z.infer<typeof apisecStoredSchema>;

/** The same blocks in `waf.yaml`: each optional, so the file can leave a block to the API. */
export const apisecFileBlocks = {
  discovery: discoverySchema.optional(),
  validation: validationSchema.optional(),
  auth: authInputSchema.superRefine((a, ctx) => {
    for (const p of authProblems(a, (a.secret ?? "") !== "")) {
      ctx.addIssue({ code: "custom", message: p.message, path: [p.field] });
    }
  }).optional(),
  rate_limits: rateLimitsSchema.optional(),
};
