/** System time synchronisation: read (`read:system`), measure now and reselect (`write:system`). */
import type { TimeSync } from "../../mod/ops/time_sync.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import type { Ctx } from "./env.ts";
import { perm, type RouteDef } from "./route.ts";

export interface TimeSyncRouteDeps extends AuditSink {
  readonly timeSync: TimeSync;
}

export function timeSyncRoutes(deps: TimeSyncRouteDeps): RouteDef[] {
  const run = (action: string, fn: () => ReturnType<TimeSync["sync"]>) => async (c: Ctx) => {
    const view = await auditFailures(c, deps, { action, target: "time" }, fn);
    deps.transaction(() =>
      deps.audit.record({
        ...auditContext(c),
        action,
        target: "time",
        result: "success",
        detail: { active: view.active, offset_ms: view.offset_ms },
      })
    );
    return c.json(view);
  };
  return [
    {
      method: "GET",
      path: "/api/system/time-sync",
      access: perm("read:system"),
      handler: (c) => c.json(deps.timeSync.view()),
    },
    {
      method: "POST",
      path: "/api/system/time-sync/sync",
      access: perm("write:system"),
      handler: run("system.time.sync", () => deps.timeSync.sync()),
    },
    {
      method: "POST",
      path: "/api/system/time-sync/reselect",
      access: perm("write:system"),
      handler: run("system.time.reselect", () => deps.timeSync.reselect()),
    },
  ];
}
