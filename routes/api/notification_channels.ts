/**
 * Notification channels: list and read with `read:monitor` (the specification's identifier for
 * notification channels); create, change, delete and test with `write:system` (the specification
 * has no write identifier for monitoring; a channel is node-wide outbound integration
 * configuration, like the other `write:system` settings). Deliveries and their attempts are read
 * with `read:monitor`. Secrets are never returned.
 */
import { z } from "zod";
import {
  CHANNEL_EVENTS,
  CHANNEL_TYPES,
  channelInput,
  channelPatch,
} from "../../mod/notify/channel_schema.ts";
import type { Channels } from "../../mod/notify/channels.ts";
import type { Dispatcher } from "../../mod/notify/dispatcher.ts";
import { actorOf, auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import type { Ctx } from "./env.ts";
import { perm, type RouteDef } from "./route.ts";
import { cursorQuery, readJson, readQuery } from "./validate.ts";

export interface ChannelRouteDeps extends AuditSink {
  readonly channels: Channels;
  readonly dispatcher: Dispatcher;
}

const BASE = "/api/notification-channels";

const deliveriesQuery = z.strictObject({
  cursor: cursorQuery.key.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

export function notificationChannelRoutes(deps: ChannelRouteDeps): RouteDef[] {
  const success = (c: Ctx, action: string, target: string, detail: Record<string, unknown>) =>
    deps.audit.record({ ...auditContext(c), action, target, result: "success", detail });

  return [
    {
      method: "GET",
      path: BASE,
      access: perm("read:monitor"),
      handler: (c) =>
        c.json({ items: deps.channels.list(), types: CHANNEL_TYPES, events: CHANNEL_EVENTS }),
    },
    {
      method: "POST",
      path: BASE,
      access: perm("write:system"),
      handler: async (c) => {
        const item = await auditFailures(c, deps, {
          action: "notification_channel.create",
          target: "notification_channel",
        }, async () => {
          const input = await readJson(c, channelInput);
          const { row, view } = await deps.channels.prepareCreate(input);
          deps.transaction(() => {
            deps.channels.insert(row);
            success(c, "notification_channel.create", `notification_channel:${row.id}`, {
              name: row.name,
              type: row.type,
              events: view.events,
            });
          });
          return view;
        });
        return c.json({ item }, 201);
      },
    },
    {
      method: "GET",
      path: `${BASE}/:id`,
      access: perm("read:monitor"),
      handler: (c) => c.json({ item: deps.channels.get(c.req.param("id")!) }),
    },
    {
      method: "PUT",
      path: `${BASE}/:id`,
      access: perm("write:system"),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const target = `notification_channel:${id}`;
        const item = await auditFailures(
          c,
          deps,
          { action: "notification_channel.update", target },
          async () => {
            const patch = await readJson(c, channelPatch);
            const { row, view } = await deps.channels.prepareUpdate(id, patch);
            deps.transaction(() => {
              deps.channels.update(row);
              success(c, "notification_channel.update", target, {
                changed: Object.keys(patch),
                settings: Object.keys(patch.settings ?? {}),
              });
            });
            return view;
          },
        );
        return c.json({ item });
      },
    },
    {
      method: "DELETE",
      path: `${BASE}/:id`,
      access: perm("write:system"),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const target = `notification_channel:${id}`;
        await auditFailures(
          c,
          deps,
          { action: "notification_channel.delete", target },
          () =>
            Promise.resolve(deps.transaction(() => {
              deps.channels.remove(id);
              success(c, "notification_channel.delete", target, {});
            })),
        );
        return c.body(null, 204);
      },
    },
    {
      method: "POST",
      path: `${BASE}/:id/test`,
      access: perm("write:system"),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const target = `notification_channel:${id}`;
        const deliveryId = await auditFailures(c, deps, {
          action: "notification_channel.test",
          target,
        }, () =>
          Promise.resolve(deps.transaction(() => {
            const d = deps.dispatcher.test(id, actorOf(c).name ?? "an operator");
            success(c, "notification_channel.test", target, { delivery: d });
            return d;
          })));
        return c.json({ delivery: deps.dispatcher.delivery(deliveryId) }, 202);
      },
    },
    {
      method: "GET",
      path: `${BASE}/:id/deliveries`,
      access: perm("read:monitor"),
      handler: (c) => {
        const q = readQuery(c, deliveriesQuery);
        return c.json(deps.dispatcher.deliveries(c.req.param("id")!, q));
      },
    },
  ];
}
