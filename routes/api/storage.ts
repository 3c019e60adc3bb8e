/**
 * Storage: the status of the store, disk, access-log pipeline, PostgreSQL sink and Redis
 * (`read:storage`); the Redis connectivity test (`write:storage`: it opens a connection to an
 * outside service; audited with its outcome), the PostgreSQL sink's run-time configuration and
 * the disk clean-up (`write:storage`, audited, refusals too).
 */
import type { z } from "zod";
import { pgSinkInputSchema } from "../../mod/access_log/pg_sink_config.ts";
import { cleanupInputSchema, type Storage } from "../../mod/ops/storage.ts";
import { auditContext } from "./actor.ts";
import { type AuditedChange, auditFailures, type AuditSink } from "./audited.ts";
import type { Ctx } from "./env.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson } from "./validate.ts";

export interface StorageRouteDeps extends AuditSink {
  readonly storage: Storage;
}

export function storageRoutes(deps: StorageRouteDeps): RouteDef[] {
  /** Reads the body, runs the change (which audits itself), audits a refusal. */
  const audited = async <S extends z.ZodType, R>(
    c: Ctx,
    what: AuditedChange,
    schema: S,
    change: (input: z.infer<S>, ctx: ReturnType<typeof auditContext>) => Promise<R>,
  ) =>
    c.json(
      await auditFailures(
        c,
        deps,
        what,
        async () => await change(await readJson(c, schema), auditContext(c)),
      ),
    );
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
        const result = await auditFailures(c, deps, {
          action: "storage.redis.test",
          target: "storage:redis",
        }, () => deps.storage.testRedis());
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
    {
      method: "PUT",
      path: "/api/storage/sink",
      access: perm("write:storage"),
      handler: (c) =>
        audited(
          c,
          { action: "storage.sink.update", target: "storage:sink" },
          pgSinkInputSchema,
          deps.storage.sink.update,
        ),
    },
    {
      method: "POST",
      path: "/api/storage/cleanup",
      access: perm("write:storage"),
      handler: (c) =>
        audited(
          c,
          { action: "storage.cleanup", target: "storage" },
          cleanupInputSchema,
          deps.storage.cleanup,
        ),
    },
  ];
}
