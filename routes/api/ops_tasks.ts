/**
 * The task scheduler's routes: read tasks and their run history with `read:ops`; change a
 * schedule and run a task now with `write:ops`. Changes and manual runs are audited (a refused
 * one too, with its code: a second run while one is in flight answers 409 `TASK_RUNNING`; on the
 * production profile a deployment task in flight on any live controller counts).
 */
import { z } from "zod";
import { toSchedule } from "../../mod/ops/schedule.ts";
import type { Scheduler } from "../../mod/ops/scheduler.ts";
import { taskUpdateInput } from "../../mod/ops/task.ts";
import { actorOf, auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import { perm, type RouteDef } from "./route.ts";
import { readJson, readQuery } from "./validate.ts";

export interface OpsTaskRouteDeps extends AuditSink {
  readonly scheduler: Scheduler;
  /** How long `POST .../run` waits for the run before answering 202 (default 10 s). */
  readonly waitMs?: number;
}

const BASE = "/api/ops/tasks";

const runsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z.coerce.number().int().min(1).optional(),
});

export function opsTaskRoutes(deps: OpsTaskRouteDeps): RouteDef[] {
  const { scheduler } = deps;
  return [
    {
      method: "GET",
      path: BASE,
      access: perm("read:ops"),
      handler: (c) => c.json({ items: scheduler.list() }),
    },
    {
      method: "GET",
      path: `${BASE}/:id`,
      access: perm("read:ops"),
      handler: (c) => c.json({ item: scheduler.get(c.req.param("id")!) }),
    },
    {
      method: "GET",
      path: `${BASE}/:id/runs`,
      access: perm("read:ops"),
      handler: (c) => {
        const q = readQuery(c, runsQuery);
        return c.json({ items: scheduler.runs(c.req.param("id")!, q.limit, q.before) });
      },
    },
    {
      method: "PUT",
      path: `${BASE}/:id`,
      access: perm("write:ops"),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const item = await auditFailures(c, deps, {
          action: "ops.task.update",
          target: `task:${id}`,
        }, async () => {
          scheduler.get(id);
          const input = await readJson(c, taskUpdateInput);
          const patch = { ...input, schedule: input.schedule && toSchedule(input.schedule) };
          return deps.transaction(() => {
            const item = scheduler.update(id, patch);
            deps.audit.record({
              ...auditContext(c),
              action: "ops.task.update",
              target: `task:${id}`,
              result: "success",
              detail: {
                ...patch,
                schedule: item.schedule,
                next_run_at: item.next_run_at,
              },
            });
            return item;
          });
        });
        return c.json({ item });
      },
    },
    {
      method: "POST",
      path: `${BASE}/:id/run`,
      access: perm("write:ops"),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const { run, done } = await auditFailures(c, deps, {
          action: "ops.task.run",
          target: `task:${id}`,
        }, () => {
          const actor = actorOf(c);
          return scheduler.runNow(id, actor.name ?? actor.type);
        });
        let timer: ReturnType<typeof setTimeout> | undefined;
        const finished = await Promise.race([
          done,
          new Promise<undefined>((r) =>
            timer = setTimeout(() => r(undefined), deps.waitMs ?? 10_000)
          ),
        ]);
        clearTimeout(timer);
        const outcome = finished ?? run;
        deps.transaction(() =>
          deps.audit.record({
            ...auditContext(c),
            action: "ops.task.run",
            target: `task:${id}`,
            result: outcome.result === "error" ? "failure" : "success",
            detail: { run_id: run.id, result: outcome.result, error: outcome.error },
          })
        );
        return c.json({ run: outcome }, finished ? 200 : 202);
      },
    },
  ];
}
