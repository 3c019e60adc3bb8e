/**
 * Several controllers acting as one deployment. One interface, two implementations: the
 * `temporary` profile's (one process: every task is trivially "once", there is no other
 * controller to hear from) and the `production` profile's on PostgreSQL
 * (`pg_coordinator.ts`): a change feed (LISTEN `waf_store_changes`), task leases and the
 * controllers registry.
 */
import { VERSION } from "../core/version.ts";

/** The channel every committed write on the PostgreSQL store notifies. */
export const CHANGE_CHANNEL = "waf_store_changes";
/** The channel a controller relays its deployment-wide realtime events on. */
export const EVENT_CHANNEL = "waf_realtime_events";
/** How often a controller writes its heartbeat and renews its leases. */
export const HEARTBEAT_MS = 5_000;
/** A controller (and a lease) not renewed for this long is taken for dead. */
export const STALE_MS = 15_000;
/**
 * A controller not seen for this long leaves the registry: every restart registers a new id, so
 * without this the table grows by one row a restart, and `GET /api/system/controllers` with it.
 * A day keeps a stopped or dead controller visible (`alive: false`) long enough to be noticed.
 */
export const FORGET_MS = 24 * 60 * 60 * 1000;

/** One controller of the deployment as `GET /api/system/controllers` answers it. */
export interface ControllerView {
  readonly id: string;
  readonly name: string;
  readonly management_address: string;
  readonly version: string;
  readonly started_at: number;
  readonly last_seen_at: number;
  readonly alive: boolean;
  readonly self: boolean;
  /** The scheduled tasks whose lease it holds. */
  readonly tasks: string[];
}

/**
 * What a remote controller changed: the tables its commit wrote, or `null` for "anything" (the
 * feed reconnected, so notices may have been missed: refresh everything).
 */
export type ChangeListener = (tables: readonly string[] | null) => void;

/** Whether a change notice can move a scheduled task's next run (`null`: it may have). */
export function changesTasks(tables: readonly string[] | null): boolean {
  return tables === null || tables.some((t) => t.toLowerCase() === "ops_tasks");
}

/** A realtime event another controller published (its bus event, as the feeds send it). */
export interface RelayedEvent {
  readonly kind: string;
  /** Milliseconds since the epoch. */
  readonly time: number;
  readonly site: { readonly id: string; readonly name: string } | null;
  /** The payload as JSON. */
  readonly data: string;
}

export interface Coordinator {
  readonly profile: "temporary" | "production";
  /** This process's id (the PostgreSQL store's `controllerId` on production). */
  readonly controllerId: string;
  /** Registers the controller, starts the heartbeat and the change feed. */
  start(self: { readonly name: string; readonly managementAddress: string }): Promise<void>;
  /** Stops the heartbeat and the feed, gives up its leases (a successor takes them at once). */
  stop(): Promise<void>;
  /** Tells `listener` about every change another controller commits. */
  onChange(listener: ChangeListener): void;
  /**
   * Hands a realtime event of this controller to the others (best effort: one that does not fit
   * a notice, or a feed that is down, is not relayed).
   */
  relay(event: RelayedEvent): void;
  /** Tells `listener` about every realtime event another controller relays. */
  onRelay(listener: (event: RelayedEvent) => void): void;
  /**
   * Takes (or keeps) the lease of `task`: true when this controller holds it now, so it alone
   * runs the task's due times; a lease not renewed for {@link STALE_MS} is taken over.
   */
  acquire(task: string): Promise<boolean>;
  /** The deployment's controllers, this one included. */
  controllers(): Promise<ControllerView[]>;
}

/** The temporary profile: one process, no feed, every lease its own. */
export function createLocalCoordinator(deps: {
  readonly controllerId: string;
  readonly now: () => number;
}): Coordinator {
  let self = { name: "", managementAddress: "" };
  let startedAt = deps.now();
  const held = new Set<string>();
  return {
    profile: "temporary",
    controllerId: deps.controllerId,
    start(s) {
      self = { name: s.name, managementAddress: s.managementAddress };
      startedAt = deps.now();
      return Promise.resolve();
    },
    stop() {
      held.clear();
      return Promise.resolve();
    },
    onChange() {},
    relay() {},
    onRelay() {},
    acquire(task) {
      held.add(task);
      return Promise.resolve(true);
    },
    controllers() {
      const now = deps.now();
      return Promise.resolve([{
        id: deps.controllerId,
        name: self.name,
        management_address: self.managementAddress,
        version: VERSION,
        started_at: startedAt,
        last_seen_at: now,
        alive: true,
        self: true,
        tasks: [...held].sort(),
      }]);
    },
  };
}

/**
 * Calls `fn` soon after the first call of a burst (on the next turn of the event loop, so the
 * calls made meanwhile share it), then at most once per `ms`: calls while that window is open
 * share one more run at its end. The first remote notice of a burst is applied at once - waiting
 * `ms` first cost every write's propagation that much - and a burst still costs two rebuilds at
 * most per window.
 */
export function debounce(fn: () => void, ms: number): { (): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** A run is due on the next turn: calls now are served by it. */
  let scheduled = false;
  /** A call came while the window was open: one more run when it closes. */
  let again = false;
  const fire = () => {
    scheduled = false;
    timer = setTimeout(() => {
      timer = undefined;
      if (again) {
        again = false;
        call();
      }
    }, ms);
    fn();
  };
  const call = () => {
    if (scheduled) return;
    if (timer !== undefined) {
      again = true;
      return;
    }
    scheduled = true;
    timer = setTimeout(fire, 0);
  };
  call.cancel = () => {
    clearTimeout(timer);
    timer = undefined;
    scheduled = false;
    again = false;
  };
  return call;
}

/**
 * {@link debounce} for work that may fail: a run that throws is told to `failed` and tried again
 * `retryMs` later, until one succeeds or a newer burst runs it. A remote change's rebuild needs
 * this: when the feed reconnects after an outage it says "anything changed" while the store may
 * still be coming back, and a rebuild lost then would leave another controller's writes out of
 * this controller's policy until the next change.
 */
export function debounceRetrying(
  fn: () => void,
  ms: number,
  retryMs: number,
  failed: (err: unknown) => void,
): { (): void; cancel(): void } {
  let retry: ReturnType<typeof setTimeout> | undefined;
  const run = debounce(() => {
    clearTimeout(retry);
    retry = undefined;
    try {
      fn();
    } catch (err) {
      failed(err);
      retry = setTimeout(() => {
        retry = undefined;
        run();
      }, retryMs);
    }
  }, ms);
  const call = () => run();
  call.cancel = () => {
    run.cancel();
    clearTimeout(retry);
    retry = undefined;
  };
  return call;
}
