/**
 * `GET /api/system/controllers`: the deployment's management controllers (one on the temporary
 * profile), which is alive and which scheduled tasks each one's lease covers.
 */
import type { Coordinator } from "../../mod/deployment/coordinator.ts";
import { AppError } from "../../mod/core/errors.ts";
import { perm, type RouteDef } from "./route.ts";

export function controllersRoutes(coordinator: Coordinator): RouteDef[] {
  return [{
    method: "GET",
    path: "/api/system/controllers",
    access: perm("read:system"),
    handler: async (c) => {
      let controllers;
      try {
        controllers = await coordinator.controllers();
      } catch {
        throw new AppError(
          503,
          "STORE_UNAVAILABLE",
          "The deployment's database does not answer: the controllers cannot be listed now",
        );
      }
      return c.json({ profile: coordinator.profile, controllers });
    },
  }];
}
