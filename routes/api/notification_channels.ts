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
import { type AuditedChange, auditFailures, type AuditSink } from "./audited.ts";
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

/** Records a committed change (inside its transaction). */
function success(
  c: Ctx,
  deps: AuditSink,
  { action, target }: AuditedChange,
  detail: Record<string, unknown>,
): void {
  deps.audit.record({ ...auditContext(c), action, target, result: "success", detail });
}

/** The channels themselves: list, create, read, change, delete. */
function channelRoutes(deps: ChannelRouteDeps): RouteDef[] {
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
            success(c, deps, {
              action: "notification_channel.create",
              target: `notification_channel:${row.id}`,
            }, {
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
        const change = {
          action: "notification_channel.update",
          target: `notification_channel:${id}`,
        };
        const item = await auditFailures(
          c,
          deps,
          change,
          async () => {
            const patch = await readJson(c, channelPatch);
            const { row, view } = await deps.channels.prepareUpdate(id, patch);
            deps.transaction(() => {
              deps.channels.update(row);
              success(c, deps, change, {
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
        const change = {
          action: "notification_channel.delete",
          target: `notification_channel:${id}`,
        };
        await auditFailures(
          c,
          deps,
          change,
          () =>
            Promise.resolve(deps.transaction(() => {
              deps.channels.remove(id);
              success(c, deps, change, {});
            })),
        );
        return c.body(null, 204);
      },
    },
  ];
}

/** A channel's test message and its deliveries with their attempts. */
function deliveryRoutes(deps: ChannelRouteDeps): RouteDef[] {
  return [
    {
      method: "POST",
      path: `${BASE}/:id/test`,
      access: perm("write:system"),
      handler: async (c) => {
        const id = c.req.param("id")!;
        const change = {
          action: "notification_channel.test",
          target: `notification_channel:${id}`,
        };
        const deliveryId = await auditFailures(
          c,
          deps,
          change,
          () =>
            Promise.resolve(deps.transaction(() => {
              const d = deps.dispatcher.test(id, actorOf(c).name ?? "an operator");
              success(c, deps, change, { delivery: d });
              return d;
            })),
        );
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

export function notificationChannelRoutes(deps: ChannelRouteDeps): RouteDef[] {
  return [...channelRoutes(deps), ...deliveryRoutes(deps)];
}
