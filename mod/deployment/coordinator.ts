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
/** How often a controller writes its heartbeat and renews its leases. */
export const HEARTBEAT_MS = 5_000;
/** A controller (and a lease) not renewed for this long is taken for dead. */
export const STALE_MS = 15_000;

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

/**
 * The tables the data plane's policy is compiled from (sites with their certificates; rules,
 * IP lists, protection, edge, API-security and block-page objects): only another controller's
 * write to one of these rebuilds this controller's policy. Every other write (sessions, audit,
 * task runs, node heartbeats) leaves it as it is: a rebuild per remote write kept the data plane's
 * thread compiling for most of a busy second.
 */
export const POLICY_TABLES: ReadonlySet<string> = new Set(["sites", "policy_objects"]);

/** Whether a change notice can change the compiled policy (`null`: notices may have been missed). */
export function changesPolicy(tables: readonly string[] | null): boolean {
  return tables === null || tables.some((t) => POLICY_TABLES.has(t.toLowerCase()));
}

/** Whether a change notice can move a scheduled task's next run (`null`: it may have). */
export function changesTasks(tables: readonly string[] | null): boolean {
  return tables === null || tables.some((t) => t.toLowerCase() === "ops_tasks");
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
