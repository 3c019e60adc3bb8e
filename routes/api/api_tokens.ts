/**
 * Management API tokens: create (the secret is in this one response), list, read and revoke.
 * Every route needs `manage:api_tokens` (the specification reserves create, query and revoke for
 * it: a `read:*` role sees no token metadata). The caller, user or token, is the creator: a token
 * can mint only narrower, shorter-lived tokens. The list also says whether tokens are switched on,
 * by which `waf.yaml` key, and that changing it takes a restart, so a client can say so before
 * anyone fills in a form.
 */
import { z } from "zod";
import { type ApiTokens, TOKENS_SETTING } from "../../mod/identity/api_tokens.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import type { Ctx } from "./env.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";
import { DURATION_HELP, durationMs } from "../../mod/core/duration.ts";

export interface ApiTokenRouteDeps extends AuditSink {
  readonly tokens: ApiTokens;
  /** Called after each creation (the cleanup worker slides its deadline). */
  readonly created: () => void;
}

/**
 * `ttl` (the specification's word for the lifetime, 2.3): a duration such as `"720h"` or `"30d"`,
 * or a whole number of seconds.
 */
const ttl = z.union([
  z.number().int().min(1, "expected at least 1 second"),
  z.string().regex(/^[1-9]\d{0,9}(s|m|h|d)$/, `expected a duration: ${DURATION_HELP}`),
], { error: `expected a duration (${DURATION_HELP}) or a whole number of seconds` })
  .transform((v) => typeof v === "number" ? v * 1000 : durationMs(v));

const createBody = z.strictObject({
  note: z.string().max(200),
  permissions: z.array(z.string().max(64)).min(1).max(64),
  ttl: ttl.optional(),
  expires_in_days: z.number().int().min(1).optional(),
  expires_at: z.iso.datetime({ offset: true, message: "expected an RFC 3339 time" }).optional(),
  non_expiring: z.boolean().optional(),
});

const MANAGE = perm("manage:api_tokens");

export function apiTokenRoutes(deps: ApiTokenRouteDeps): RouteDef[] {
  const revoke = async (c: Ctx) => {
    const id = c.req.param("id")!;
    const item = await auditFailures(c, deps, {
      action: "api_token.revoke",
      target: `api_token:${id}`,
    }, () => Promise.resolve(deps.tokens.revoke(id, auditContext(c))));
    return c.json({ item });
  };

  return [
    {
      method: "POST",
      path: "/api/system/api-tokens",
      access: MANAGE,
      handler: async (c) => {
        const p = c.get("principal")!;
        const created = await auditFailures(c, deps, {
          action: "api_token.create",
          target: "api_tokens",
        }, async () => {
          const { ttl, ...body } = await readJson(c, createBody);
          const own = p.kind === "token" ? deps.tokens.get(p.id).expires_at : null;
          return deps.tokens.create({ ...body, ttl_ms: ttl }, {
            id: `${p.kind}:${p.id}`,
            permissions: p.permissions,
            expiresAt: own === null ? null : Date.parse(own),
          }, auditContext(c));
        });
        deps.created();
        c.header("cache-control", "no-store");
        return c.json(created, 201);
      },
    },
    {
      method: "GET",
      path: "/api/system/api-tokens",
      access: MANAGE,
      handler: (c) =>
        c.json({
          enabled: deps.tokens.enabled(),
          setting: TOKENS_SETTING,
          restart_required: true,
          items: deps.tokens.list(),
        }),
    },
    {
      method: "GET",
      path: "/api/system/api-tokens/:id",
      access: MANAGE,
      handler: (c) => c.json({ item: deps.tokens.get(c.req.param("id")!) }),
    },
    { method: "DELETE", path: "/api/system/api-tokens/:id", access: MANAGE, handler: revoke },
    { method: "POST", path: "/api/system/api-tokens/:id/revoke", access: MANAGE, handler: revoke },
  ];
}
