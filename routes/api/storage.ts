/**
 * Storage: the status of the store, disk, access-log pipeline, PostgreSQL sink and Redis
 * (`read:storage`), and the Redis connectivity test (`write:storage`: it opens a connection to
 * an outside service; audited with its outcome).
 */
import type { Storage } from "../../mod/ops/storage.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import { perm, type RouteDef } from "./route.ts";

export interface StorageRouteDeps extends AuditSink {
  readonly storage: Storage;
}

export function storageRoutes(deps: StorageRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/storage",
      access: perm("read:storage"),
      handler: async (c) => c.json(await deps.storage.status()),
    },
    {
      method: "POST",
      path: "/api/storage/redis/test",
      access: perm("write:storage"),
      handler: async (c) => {
        const result = await auditFailures(
          c,
          deps,
          "storage.redis.test",
          "storage:redis",
          () => deps.storage.testRedis(),
        );
        deps.transaction(() =>
          deps.audit.record({
            ...auditContext(c),
            action: "storage.redis.test",
            target: "storage:redis",
            result: result.ok ? "success" : "failure",
            detail: {
              endpoint: result.endpoint,
              latency_ms: result.latency_ms,
              version: result.version,
              error: result.error,
            },
          })
        );
        return c.json(result);
      },
    },
  ];
}
