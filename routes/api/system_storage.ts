/**
 * `GET /api/system/storage`: the management database (profile, engine, where it is, schema
 * version, whether it answers and its latency) and the deployment's controllers with the
 * scheduled tasks each holds. During a database outage it still answers 200, with
 * `available: false` and what this controller knows; the DSN's password is never shown.
 */
import type { StoreFacts } from "../../mod/deployment/store_facts.ts";
import { perm, type RouteDef } from "./route.ts";

export function systemStorageRoutes(facts: StoreFacts): RouteDef[] {
  return [{
    method: "GET",
    path: "/api/system/storage",
    access: perm("read:system"),
    handler: async (c) => c.json(await facts.view()),
  }];
}
