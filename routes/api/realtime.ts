/**
 * The realtime feeds (`read:realtime`): Server-Sent Events at `/api/realtime/events` and a
 * WebSocket at `/api/realtime/ws`, carrying the same events (docs/monitoring.md). Both filter by
 * kind and site (`?kinds=access.blocked,upstream.health&site=shop`), resume after an event id
 * (`Last-Event-ID`, or `?last_event_id=` for the WebSocket) from the bus's ring buffer, and send a
 * heartbeat when nothing else was sent for the configured interval. A WebSocket authenticated by
 * a session cookie must come from the console's own origin (browsers send cookies on cross-site
 * WebSocket handshakes, so the `Origin` is the only defence against cross-site hijacking).
 * A connection that carries a feed stops counting toward the management listener's per-client
 * connection cap (an office behind one address keeps its consoles' feeds; docs/data-plane.md).
 */
import { z } from "zod";
import { AppError, badRequest } from "../../mod/core/errors.ts";
import {
  type BusEvent,
  type EventBus,
  REALTIME_KINDS,
  type Subscriber,
  type SubscriberFilter,
} from "../../mod/monitor/event_bus.ts";
import type { Ctx } from "./env.ts";
import { perm, type RouteDef } from "./route.ts";
import { readQuery } from "./validate.ts";

export interface RealtimeRouteDeps {
  readonly bus: EventBus;
  readonly heartbeatMs: number;
  /** The console's public origin (`server.management.base_url`), when configured. */
  readonly baseUrl?: string;
}

const list = z.string().max(2000).transform((v) =>
  v.split(",").map((s) => s.trim()).filter(Boolean)
);
const filterQuery = z.strictObject({
  kinds: list.pipe(z.array(z.enum(REALTIME_KINDS))).optional(),
  site: list.optional(),
  last_event_id: z.string().regex(/^\d{1,20}$/, "expected an event id").optional(),
});

const encoder = new TextEncoder();
/** A WebSocket whose unsent data passes this keeps its events queued (and may lose some). */
const WS_BUFFER_LIMIT = 1 << 20;

function filterOf(c: Ctx) {
  const q = readQuery(c, filterQuery);
  const header = c.req.header("last-event-id");
  if (header !== undefined && !/^\d{1,20}$/.test(header)) {
    throw badRequest('Invalid header "Last-Event-ID": expected an event id', "Last-Event-ID");
  }
  const filter: SubscriberFilter = {
    kinds: q.kinds && q.kinds.length > 0 ? new Set(q.kinds) : null,
    sites: q.site && q.site.length > 0 ? new Set(q.site) : null,
  };
  const last = header ?? q.last_event_id;
  return { filter, lastId: last === undefined ? undefined : Number(last) };
}

/** The events to send first: a gap notice, then what the ring still holds after `lastId`. */
function replay(bus: EventBus, sub: Subscriber, lastId: number | undefined) {
  if (lastId === undefined) return { gap: false, events: [] as BusEvent[] };
  return bus.since(lastId, sub);
}

/** The Server-Sent Events feed: the replay first, then events or heartbeats as they come. */
function sse(c: Ctx, deps: RealtimeRouteDeps): Response {
  const { bus } = deps;
  const { filter, lastId } = filterOf(c);
  c.env?.longLived?.();
  const sub = bus.subscribe(filter, "sse");
  const first = replay(bus, sub, lastId);
  let started = false;
  let done = false;
  const frame = (e: BusEvent) => `id: ${e.id}\nevent: ${e.kind}\ndata: ${e.envelope()}\n\n`;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      sub.onClose = (reason) => {
        if (reason === "too_slow" && !done) {
          done = true;
          try {
            controller.enqueue(encoder.encode(
              `event: stream.closed\ndata: {"reason":"too_slow","dropped":${sub.dropped}}\n\n`,
            ));
            controller.close();
          } catch { /* the client is gone */ }
        }
      };
    },
    async pull(controller) {
      if (!started) {
        started = true;
        let text = `retry: 3000\n: connected\n\n`;
        if (first.gap) text += `event: stream.gap\ndata: {"last_event_id":"${lastId}"}\n\n`;
        for (const e of first.events) text += frame(e);
        controller.enqueue(encoder.encode(text));
        return;
      }
      await sub.wait(deps.heartbeatMs);
      if (done) return;
      if (sub.closed !== null) {
        done = true;
        controller.close();
        return;
      }
      if (sub.queue.length === 0) {
        controller.enqueue(encoder.encode(`: heartbeat\n\n`));
        return;
      }
      let text = "";
      for (const e of sub.queue.splice(0)) text += frame(e);
      controller.enqueue(encoder.encode(text));
    },
    cancel() {
      done = true;
      bus.unsubscribe(sub);
    },
  }, { highWaterMark: 0 });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
}

/** True when the handshake's `Origin` is the console's own (the `Host`, or the base URL). */
function sameOrigin(c: Ctx, baseUrl: string | undefined): boolean {
  const origin = c.req.header("origin");
  if (origin === undefined) return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false;
  }
  if (host === c.req.header("host")) return true;
  if (baseUrl === undefined) return false;
  try {
    return new URL(baseUrl).origin === new URL(origin).origin;
  } catch {
    return false;
  }
}

/** The WebSocket feed: the same events as the SSE feed, one JSON envelope per message. */
function ws(c: Ctx, deps: RealtimeRouteDeps): Response {
  const { bus } = deps;
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
    throw new AppError(
      426,
      "UPGRADE_REQUIRED",
      "This endpoint is a WebSocket: connect with a WebSocket client",
    );
  }
  if (c.req.header("authorization") === undefined && !sameOrigin(c, deps.baseUrl)) {
    throw new AppError(
      403,
      "ORIGIN_REFUSED",
      "A WebSocket signed in with a session cookie must come from the console's own origin",
    );
  }
  const { filter, lastId } = filterOf(c);
  const { socket, response } = Deno.upgradeWebSocket(c.req.raw);
  c.env?.longLived?.();
  const sub = bus.subscribe(filter, "websocket");
  sub.onClose = (reason) => {
    if (reason === "too_slow") {
      try {
        socket.close(4008, "too slow: events dropped");
      } catch { /* already closing */ }
    }
  };
  socket.onopen = async () => {
    const first = replay(bus, sub, lastId);
    if (first.gap) socket.send(`{"kind":"stream.gap","last_event_id":"${lastId}"}`);
    for (const e of first.events) socket.send(e.envelope());
    while (sub.closed === null && socket.readyState === WebSocket.OPEN) {
      await sub.wait(deps.heartbeatMs);
      if (sub.closed !== null || socket.readyState !== WebSocket.OPEN) break;
      if (sub.queue.length === 0) {
        socket.send(`{"kind":"heartbeat"}`);
        continue;
      }
      // A client that does not read keeps its events queued here, where they are bounded.
      if (socket.bufferedAmount > WS_BUFFER_LIMIT) continue;
      for (const e of sub.queue.splice(0)) socket.send(e.envelope());
    }
  };
  socket.onclose = () => bus.unsubscribe(sub);
  socket.onerror = () => bus.unsubscribe(sub);
  return response;
}

export function realtimeRoutes(deps: RealtimeRouteDeps): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/realtime/events",
      access: perm("read:realtime"),
      handler: (c) => sse(c, deps),
    },
    {
      method: "GET",
      path: "/api/realtime/ws",
      access: perm("read:realtime"),
      handler: (c) => ws(c, deps),
    },
  ];
}
