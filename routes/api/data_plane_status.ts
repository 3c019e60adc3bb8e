/**
 * `GET /api/system/data-plane`: how the data plane runs on this node: the `server.data.workers`
 * setting, the worker threads it started and, per worker, whether it serves, the policy version
 * it enforces, the requests it finished and its restarts (docs/data-plane.md, "Workers: the data plane on every core").
 */
import { perm, type RouteDef } from "./route.ts";

export interface DataPlaneStatus {
  /** `server.data.workers` as configured. */
  readonly setting: "auto" | number;
  /** Worker threads serving the data ports; 1 means the main thread serves them. */
  readonly workers: number;
  /** Cores available to the process (`auto` takes this many, at most 32). */
  readonly cores: number;
  /** The main thread's policy version, which every worker must acknowledge. */
  readonly policy_version: number;
  /** True while every serving worker enforces `policy_version`. */
  readonly current: boolean;
  readonly threads: ReadonlyArray<{
    readonly index: number;
    readonly live: boolean;
    readonly version: number;
    readonly requests: number;
    readonly restarts: number;
  }>;
}

export function dataPlaneStatusRoutes(status: () => DataPlaneStatus): RouteDef[] {
  return [{
    method: "GET",
    path: "/api/system/data-plane",
    access: perm("read:system"),
    handler: (c) => c.json(status()),
  }];
}
