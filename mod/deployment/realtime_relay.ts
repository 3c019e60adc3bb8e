/**
 * The realtime feeds of a deployment of several controllers. Events about the deployment's
 * shared state (a management change, a notification, a finished task, a node's state, an AI
 * approval, an ACME certificate) happen on one controller and are relayed to the others
 * through the coordinator, so a console connected to any controller sees each of them once
 * (the controller that published one never hears it back, and a relayed event is not handed
 * on again). Events of a controller's own data plane, upstream probes and clock
 * (`access.blocked`, `access.challenged`, `upstream.health`, `time.sync`) stay on its own feed.
 */
import type { EventBus, RealtimeKind } from "../monitor/event_bus.ts";
import type { Coordinator } from "./coordinator.ts";

/** The kinds relayed to every controller's feeds. */
export const DEPLOYMENT_KINDS: ReadonlySet<RealtimeKind> = new Set<RealtimeKind>([
  "config.changed",
  "notification.created",
  "task.finished",
  "node.status",
  "ai.approval",
  "acme.certificate",
]);

/** Hands this bus's deployment-wide events to the other controllers, and theirs to this bus. */
export function relayRealtime(bus: EventBus, coordinator: Coordinator): void {
  bus.listen((e) => {
    if (e.relayed || !DEPLOYMENT_KINDS.has(e.kind)) return;
    coordinator.relay({
      kind: e.kind,
      time: e.time,
      site: e.siteId === null ? null : { id: e.siteId, name: e.siteName ?? "" },
      data: e.json(),
    });
  });
  coordinator.onRelay((e) => {
    if (!DEPLOYMENT_KINDS.has(e.kind as RealtimeKind)) return;
    bus.publishRelayed({ ...e, kind: e.kind as RealtimeKind });
  });
}
