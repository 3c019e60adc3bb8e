/**
 * `/api/sites`: list, create, read, replace and delete sites, and the upstreams' passive health
 * (`read:sites` / `write:sites`). A site created or replaced without `level` gets the default
 * level (chosen at setup).
 */
import { z } from "zod";
import type { Sites } from "../../mod/data_plane/sites.ts";
import { siteInputSchema } from "../../mod/data_plane/site_schema.ts";
import { auditContext } from "./actor.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

const siteBody = siteInputSchema.extend({
  level: z.enum(["low", "balanced", "strict"]).optional(),
});

export function siteRoutes(sites: Sites): RouteDef[] {
  const withLevel = (input: z.output<typeof siteBody>) => ({
    ...input,
    level: input.level ?? sites.defaultLevel(),
  });
  return [
    {
      method: "GET",
      path: "/api/sites",
      access: perm("read:sites"),
      handler: (c) => c.json({ items: sites.list() }),
    },
    {
      // Before "/api/sites/:id", which would otherwise take "health" for an id.
      method: "GET",
      path: "/api/sites/health",
      access: perm("read:sites"),
      handler: (c) => c.json({ items: sites.health() }),
    },
    {
      method: "POST",
      path: "/api/sites",
      access: perm("write:sites"),
      handler: async (c) => {
        const input = withLevel(await readJson(c, siteBody));
        return c.json(sites.create(input, auditContext(c)), 201);
      },
    },
    {
      method: "GET",
      path: "/api/sites/:id",
      access: perm("read:sites"),
      handler: (c) => c.json(sites.get(c.req.param("id") ?? "")),
    },
    {
      method: "PUT",
      path: "/api/sites/:id",
      access: perm("write:sites"),
      handler: async (c) => {
        const input = withLevel(await readJson(c, siteBody));
        return c.json(sites.update(c.req.param("id") ?? "", input, auditContext(c)));
      },
    },
    {
      method: "DELETE",
      path: "/api/sites/:id",
      access: perm("write:sites"),
      handler: (c) => {
        sites.remove(c.req.param("id") ?? "", auditContext(c));
        return c.body(null, 204);
      },
    },
  ];
}
