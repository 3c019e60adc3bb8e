/**
 * Administrator notifications: list (newest first, unread filter, cursor) and mark read. Both
 * need `read:monitor` (the specification's identifier for notification channels); marking read
 * changes only the caller's own inbox, so it is no write of shared state. Each item carries its
 * `kind` and `params` (what the console writes its text from) and the console page it is about
 * (`link`), besides the English `title` and `body`.
 */
import { z } from "zod";
import type { Notifications } from "../../mod/core/notifications.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import type { Ctx } from "./env.ts";
import { perm, type RouteDef } from "./route.ts";
import { cursorQuery, readQuery } from "./validate.ts";

export interface NotificationRouteDeps extends AuditSink {
  readonly notifications: Notifications;
}

const listQuery = z.strictObject({
  unread: z.enum(["true", "false"]).default("false"),
  cursor: cursorQuery.key.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/** The inbox of the caller: a user or an API token. */
function readerOf(c: Ctx): string {
  const p = c.get("principal")!;
  return `${p.kind}:${p.id}`;
}

export function notificationRoutes(deps: NotificationRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/notifications",
      access: perm("read:monitor"),
      handler: (c) => {
        const q = readQuery(c, listQuery);
        return c.json(deps.notifications.list(readerOf(c), {
          unread: q.unread === "true",
          cursor: q.cursor,
          limit: q.limit,
        }));
      },
    },
    {
      method: "POST",
      path: "/api/notifications/:id/read",
      access: perm("read:monitor"),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const item = await auditFailures(c, deps, {
          action: "notification.read",
          target: `notification:${id}`,
        }, () =>
          Promise.resolve(deps.transaction(() => {
            const view = deps.notifications.markRead(id, readerOf(c));
            deps.audit.record({
              ...auditContext(c),
              action: "notification.read",
              target: `notification:${id}`,
              result: "success",
            });
            return view;
          })));
        return c.json({ item });
      },
    },
  ];
}
