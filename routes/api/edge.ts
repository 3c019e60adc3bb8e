/**
 * `/api/edge` (`read:edge` / `write:edge`): response header rules, cache and compression
 * settings, cache statistics and purge.
 */
import { z } from "zod";
import type { EdgeCache } from "../../mod/protection/edge_cache.ts";
import type { PolicyObjects } from "../../mod/protection/policy_objects.ts";
import { KIND } from "../../mod/protection/protection_compile.ts";
import {
  edgeSettingsSchema,
  headerRuleSchema,
  parseStored,
} from "../../mod/protection/protection_schema.ts";
import { auditContext } from "./actor.ts";
import { crudRoutes } from "./protection.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

const purgeSchema = z.strictObject({
  site_id: z.string().min(1).max(64).nullable().default(null),
  path_prefix: z.string().startsWith("/").max(1024).nullable().default(null),
});

export function edgeRoutes(objects: PolicyObjects, cache: EdgeCache): RouteDef[] {
  return [
    ...crudRoutes(objects, {
      base: "/api/edge/header-rules",
      kind: KIND.headerRule,
      label: "header rule",
      audit: "edge.header_rule",
      schema: headerRuleSchema,
      read: "read:edge",
      write: "write:edge",
    }),
    {
      method: "GET",
      path: "/api/edge/settings",
      access: perm("read:edge"),
      handler: (c) => c.json(parseStored(edgeSettingsSchema, objects.singleton(KIND.edge))),
    },
    {
      method: "PUT",
      path: "/api/edge/settings",
      access: perm("write:edge"),
      handler: async (c) => {
        const doc = await readJson(c, edgeSettingsSchema);
        objects.putSingleton(
          { kind: KIND.edge, audit: "edge.settings" },
          doc,
          auditContext(c),
          doc,
        );
        cache.setMaxBytes(doc.cache.max_bytes);
        if (!doc.cache.enabled) cache.purge(null, null);
        return c.json(doc);
      },
    },
    {
      method: "GET",
      path: "/api/edge/cache",
      access: perm("read:edge"),
      handler: (c) => c.json(cache.stats()),
    },
    {
      method: "POST",
      path: "/api/edge/cache/purge",
      access: perm("write:edge"),
      handler: async (c) => {
        const body = await readJson(c, purgeSchema);
        const { purged, unanswered } = await cache.purgeAll(body.site_id, body.path_prefix);
        // `complete: false`: a data worker (busy, or restarting) did not answer within 1 s; it
        // still purges, but its count is missing from `purged`.
        const answer = { purged, complete: unanswered === 0, unanswered_workers: unanswered };
        objects.auditOnly("edge.cache.purge", auditContext(c), { ...body, ...answer });
        return c.json(answer);
      },
    },
  ];
}
