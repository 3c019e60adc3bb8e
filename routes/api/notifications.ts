/** Administrator notifications: list (newest first, unread filter, cursor) and mark read. */
import { z } from "zod";
import type { Notifications } from "../../mod/core/notifications.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import { perm, type RouteDef } from "./route.ts";
import { readQuery } from "./validate.ts";

export interface NotificationRouteDeps extends AuditSink {
  readonly notifications: Notifications;
}

const listQuery = z.strictObject({
  unread: z.enum(["true", "false"]).default("false"),
  cursor: z.string().max(128).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

export function notificationRoutes(deps: NotificationRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/notifications",
      access: perm("read:notifications"),
      handler: (c) => {
        const q = readQuery(c, listQuery);
        return c.json(deps.notifications.list({
          unread: q.unread === "true",
          cursor: q.cursor,
          limit: q.limit,
        }));
      },
    },
    {
      method: "POST",
      path: "/api/notifications/:id/read",
      access: perm("write:notifications"),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const item = await auditFailures(
          c,
          deps,
          "notification.read",
          `notification:${id}`,
          () =>
            Promise.resolve(deps.transaction(() => {
              const view = deps.notifications.markRead(id);
              deps.audit.record({
                ...auditContext(c),
                action: "notification.read",
                target: `notification:${id}`,
                result: "success",
              });
              return view;
            })),
        );
        return c.json({ item });
      },
    },
  ];
}
