/**
 * The Prometheus families of services the monitoring composition (`app/monitor.ts`) registers
 * beside the data plane's: notification deliveries, realtime subscribers and events, and time
 * synchronisation.
 */
import type { Collector } from "../mod/monitor/exposition.ts";
import type { EventBus } from "../mod/monitor/event_bus.ts";
import type { Dispatcher } from "../mod/notify/dispatcher.ts";
import type { TimeSync } from "../mod/ops/time_sync.ts";

/** Delivery attempts by channel type and outcome, and deliveries waiting. */
export function deliveriesCollector(dispatcher: Dispatcher): Collector {
  return (out) => {
    out.family(
      "waf_notification_deliveries_total",
      "counter",
      "Notification delivery attempts by channel type and outcome",
    );
    for (const [key, n] of dispatcher.outcomes()) {
      const [type = "", outcome = ""] = key.split(" ");
      out.sample("waf_notification_deliveries_total", { type, outcome }, n);
    }
    out.family(
      "waf_notification_pending",
      "gauge",
      "Notification deliveries waiting for an attempt",
    );
    out.sample("waf_notification_pending", {}, dispatcher.pending());
  };
}

/** Realtime subscribers by transport, events by kind, drops and slow disconnects. */
export function realtimeCollector(bus: EventBus): Collector {
  return (out) => {
    const stats = bus.stats();
    out.family("waf_realtime_subscribers", "gauge", "Connected realtime subscribers by transport");
    for (const transport of ["sse", "websocket"]) {
      out.sample("waf_realtime_subscribers", { transport }, stats.subscribers[transport] ?? 0);
    }
    out.family("waf_realtime_events_total", "counter", "Realtime events published by kind");
    for (const [kind, n] of Object.entries(stats.published)) {
      out.sample("waf_realtime_events_total", { kind }, n);
    }
    out.family(
      "waf_realtime_dropped_total",
      "counter",
      "Events dropped for subscribers whose queue was full",
    );
    out.sample("waf_realtime_dropped_total", {}, stats.dropped);
    out.family(
      "waf_realtime_disconnects_total",
      "counter",
      "Subscribers disconnected for being too slow",
    );
    out.sample("waf_realtime_disconnects_total", {}, stats.disconnected);
  };
}

/** The measured clock offset, whether it is past its limit, and which time servers answer. */
export function timeCollector(timeSync: TimeSync): Collector {
  return (out) => {
    const time = timeSync.figures();
    out.family(
      "waf_time_offset_seconds",
      "gauge",
      "Measured offset of the host clock to the active time server (positive: host behind)",
    );
    if (time.offsetMs !== null) out.sample("waf_time_offset_seconds", {}, time.offsetMs / 1000);
    out.family(
      "waf_time_offset_exceeded",
      "gauge",
      "1 while the measured offset is above time.max_offset",
    );
    out.sample("waf_time_offset_exceeded", {}, time.exceeded ? 1 : 0);
    out.family(
      "waf_time_server_reachable",
      "gauge",
      "1 when the time server answered its last query",
    );
    for (const s of time.states) {
      if (s.reachable !== null) {
        out.sample("waf_time_server_reachable", { server: s.server }, s.reachable ? 1 : 0);
      }
    }
  };
}
