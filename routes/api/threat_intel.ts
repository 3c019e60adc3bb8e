/**
 * `/api/threat-intel`: feeds (`read:threat_intel` / `write:threat_intel`) with their last sync
 * result, on-demand sync, and a lookup answering whether an address is listed and by which
 * feeds (against the indicators the data plane is enforcing right now).
 */
import { z } from "zod";
import { AppError } from "../../mod/core/errors.ts";
import type { PolicyObjects } from "../../mod/protection/policy_objects.ts";
import { KIND } from "../../mod/protection/protection_compile.ts";
import { threatFeedSchema } from "../../mod/protection/protection_schema.ts";
import { isIpAddress, type ThreatFeeds } from "../../mod/protection/threat_feeds.ts";
import { auditContext } from "./actor.ts";
import { crudRoutes } from "./protection.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

const lookupSchema = z.strictObject({
  ip: z.string().refine(isIpAddress, {
    message: "expected an IPv4 or IPv6 address",
  }),
});

export function threatIntelRoutes(deps: {
  objects: PolicyObjects;
  feeds: ThreatFeeds;
}): RouteDef[] {
  const { feeds } = deps;
  return [
    ...crudRoutes(deps.objects, {
      base: "/api/threat-intel/feeds",
      kind: KIND.feed,
      label: "threat feed",
      audit: "threat_intel.feed",
      schema: threatFeedSchema,
      read: "read:threat_intel",
      write: "write:threat_intel",
      decorate: feeds.decorate,
      afterWrite: (item) => void feeds.sync(item.id),
      afterDelete: feeds.forget,
    }),
    {
      method: "POST",
      path: "/api/threat-intel/feeds/:id/sync",
      access: perm("write:threat_intel"),
      handler: async (c) => {
        const id = c.req.param("id") ?? "";
        const status = await feeds.syncAudited(id, auditContext(c));
        if (!status) throw new AppError(404, "NOT_FOUND", `No threat feed "${id}"`);
        return c.json({ id, status });
      },
    },
    {
      method: "POST",
      path: "/api/threat-intel/lookup",
      access: perm("read:threat_intel"),
      handler: async (c) => {
        const { ip } = await readJson(c, lookupSchema);
        return c.json(feeds.lookup(ip));
      },
    },
  ];
}
