/** Health probes: public JSON for load balancers and orchestrators. */
import { dataPlaneReady, isReady, type Readiness, storeState } from "../../mod/core/readiness.ts";
import { VERSION } from "../../mod/core/version.ts";
import { PUBLIC, type RouteDef } from "./route.ts";

/** What `/health/cluster` reports: the cluster role's summary, without secrets. */
export type ClusterHealth = () => {
  readonly healthy: boolean;
  readonly body: Record<string, unknown>;
};

export function healthRoutes(readiness: Readiness, cluster: ClusterHealth): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/health",
      access: PUBLIC,
      handler: (c) => {
        const ready = isReady(readiness);
        return c.json({
          status: readiness.shuttingDown ? "shutting_down" : ready ? "ok" : "starting",
          version: VERSION,
          checks: {
            store: readiness.store,
            store_state: storeState(readiness),
            data_plane: dataPlaneReady(readiness),
            management: readiness.management,
          },
        }, ready ? 200 : 503);
      },
    },
    {
      method: "GET",
      path: "/health/live",
      access: PUBLIC,
      handler: (c) => c.json({ status: "alive" }),
    },
    {
      method: "GET",
      path: "/health/ready",
      access: PUBLIC,
      handler: (c) => {
        const ready = isReady(readiness);
        // The store's database gone is degraded, not unready: the data plane keeps enforcing the
        // last policy, and another controller would find the same database gone.
        const store = storeState(readiness);
        return c.json({
          status: !ready
            ? readiness.shuttingDown ? "shutting_down" : "starting"
            : store === "unavailable"
            ? "degraded"
            : "ready",
          ...(store === "ok" ? {} : { checks: { store } }),
        }, ready ? 200 : 503);
      },
    },
    {
      method: "GET",
      path: "/health/cluster",
      access: PUBLIC,
      handler: (c) => {
        const h = cluster();
        return c.json(h.body, h.healthy ? 200 : 503);
      },
    },
  ];
}
