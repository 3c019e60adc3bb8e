/**
 * `/api/apisec`: the API-security settings (`GET`/`PUT /api/apisec/config`) and the schema
 * tester (`POST /api/apisec/validate`). Reads need `read:apisec` (specification 4.3); the
 * specification has no write identifier for API security, and its settings are data-plane
 * protection controls (schema blocks, route limits, token checks) like the global rate limit,
 * so writes need `write:protection` (docs/api-security.md).
 */
import { z } from "zod";
import type { CompiledApiSec } from "../../mod/apisec/apisec_compile.ts";
import { listEndpoints } from "../../mod/apisec/endpoints_query.ts";
import { importOpenApi, parseOpenApiText } from "../../mod/apisec/openapi.ts";
import { AppError } from "../../mod/core/errors.ts";
import type { Inventory } from "../../mod/apisec/inventory.ts";
import type { PolicyObjects } from "../../mod/protection/policy_objects.ts";
import { apisecConfigSchema, type SchemaEntry } from "../../mod/apisec/apisec_schema.ts";
import type { ApiSecSettings } from "../../mod/apisec/apisec_settings.ts";
import { type TestRequest, validateTestRequest } from "../../mod/apisec/apisec_validate.ts";
import { auditContext } from "./actor.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson, readQuery } from "./validate.ts";

const flag = z.enum(["true", "false"]).transform((v) => v === "true").optional();
const importQuerySchema = z.strictObject({
  mode: z.enum(["merge", "replace"]).default("merge"),
  /** The site the imported entries apply to; absent: every site. */
  site_id: z.string().min(1).max(64).optional(),
});
/** An OpenAPI document larger than this is refused (a few thousand operations fit). */
const MAX_OPENAPI_BYTES = 4 << 20;

const endpointQuerySchema = z.strictObject({
  site_id: z.string().min(1).max(64).optional(),
  method: z.string().regex(/^[A-Za-z]{1,16}$/).transform((m) => m.toUpperCase()).optional(),
  q: z.string().min(1).max(512).optional(),
  shadow: flag,
  covered: flag,
  limit: z.coerce.number().int().min(1).max(500).default(100),
  offset: z.coerce.number().int().min(0).default(0),
});

const testRequestSchema = z.strictObject({
  site_id: z.string().min(1).max(64).nullable().default(null),
  method: z.string().regex(/^[A-Za-z]{1,16}$/, "expected an HTTP method")
    .transform((m) => m.toUpperCase()),
  path: z.string().startsWith("/", 'expected a path starting with "/"').max(8192),
  headers: z.record(z.string().min(1).max(128), z.string().max(8192)).default({}),
  query: z.union([
    z.string().max(8192),
    z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).transform((o) =>
      new URLSearchParams(Object.entries(o).map(([k, v]) => [k, String(v)])).toString()
    ),
  ]).default(""),
  /** A string is sent as is; anything else as JSON (with a JSON content type unless one is set). */
  body: z.unknown().optional(),
});

export interface ApiSecRouteDeps {
  readonly settings: ApiSecSettings;
  /** The settings in force in the data plane. */
  readonly compiled: () => CompiledApiSec;
  readonly inventory: Inventory;
  /** Every stored schema entry (what counts as documented for the shadow flag). */
  readonly schemas: () => readonly SchemaEntry[];
  /** Records actions that change no settings document (clearing the inventory). */
  readonly audit: Pick<PolicyObjects, "auditOnly">;
  /** The `upstream_kind` of a site in force, which the validator reads the path as. */
  readonly upstreamKind?: (siteId: string) => TestRequest["upstreamKind"];
}

export function apisecRoutes(deps: ApiSecRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/apisec/config",
      access: perm("read:apisec"),
      handler: (c) => c.json(deps.settings.get()),
    },
    {
      method: "PUT",
      path: "/api/apisec/config",
      access: perm("write:protection"),
      handler: async (c) => {
        const doc = await readJson(c, apisecConfigSchema);
        return c.json(await deps.settings.put(doc, auditContext(c)));
      },
    },
    {
      method: "GET",
      path: "/api/apisec/endpoints",
      access: perm("read:apisec"),
      handler: (c) => {
        const f = readQuery(c, endpointQuerySchema);
        return c.json(listEndpoints(deps, { ...f, siteId: f.site_id }));
      },
    },
    {
      method: "DELETE",
      path: "/api/apisec/endpoints",
      access: perm("write:protection"),
      handler: (c) => {
        const before = deps.inventory.stats().endpoints;
        deps.inventory.clear();
        deps.audit.auditOnly("apisec.endpoints.clear", auditContext(c), { endpoints: before });
        return c.body(null, 204);
      },
    },
    {
      method: "POST",
      path: "/api/apisec/openapi",
      access: perm("write:protection"),
      handler: async (c) => {
        const q = readQuery(c, importQuerySchema);
        let text = await c.req.text();
        // The console sends the document's JSON or YAML text as a JSON string.
        if (text.startsWith('"') && (c.req.header("content-type") ?? "").includes("json")) {
          try {
            text = String(JSON.parse(text));
          } catch {
            // left to the parser's message
          }
        }
        if (text.length > MAX_OPENAPI_BYTES) {
          throw new AppError(413, "PAYLOAD_TOO_LARGE", "OpenAPI document over 4 MiB");
        }
        const result = importOpenApi(parseOpenApiText(text));
        const entries = result.entries.map((e) => ({ ...e, site_id: q.site_id ?? null }));
        const settings = await deps.settings.addSchemas(entries, q.mode, auditContext(c));
        return c.json({
          imported: entries.map((e) => e.id),
          skipped: result.skipped,
          validation: settings.validation,
        });
      },
    },
    {
      method: "POST",
      path: "/api/apisec/validate",
      access: perm("read:apisec"),
      handler: async (c) => {
        const t = await readJson(c, testRequestSchema);
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(t.headers)) headers[k.toLowerCase()] = v;
        let body = "";
        if (typeof t.body === "string") body = t.body;
        else if (t.body !== undefined) {
          body = JSON.stringify(t.body);
          headers["content-type"] ??= "application/json";
        }
        const result = validateTestRequest(deps.compiled(), {
          siteId: t.site_id,
          method: t.method,
          path: t.path,
          headers,
          query: t.query,
          body,
          upstreamKind: t.site_id === null ? undefined : deps.upstreamKind?.(t.site_id),
        });
        return c.json(result);
      },
    },
  ];
}
