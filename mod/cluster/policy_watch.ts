/**
 * The controller's side of a node's policy long-poll (`GET /api/cluster/nodes/{id}/policy/watch`):
 * the request waits until the controller's policy version differs from the one the node holds,
 * or `WATCH_WAIT_MS` passes, so a node follows a change within a fraction of a second without
 * polling more often than its heartbeat. One waiting request per node (a newer one ends the
 * older), at most `MAX_WATCHERS` per controller, all of them answered when the controller stops
 * (and later ones refused).
 */
import type { Logger } from "../core/logger.ts";
import { realTimers, type TimerId, type Timers } from "../../net/timers.ts";

/** How long a watch waits for a change before answering "no change" (25 s). */
export const WATCH_WAIT_MS = 25_000;
/** Waiting requests one controller holds at most; past it a watch is refused with 503. */
export const MAX_WATCHERS = 1024;
/**
 * A swap is checked this long after it happens (50 ms): a burst of writes (one swap each)
 * computes the version once, not once per write.
 */
const SETTLE_MS = 50;

/** What a watch is answered: the controller's version and whether it differs from the node's. */
export type WatchAnswer =
  | { readonly kind: "answer"; readonly changed: boolean; readonly policy_version: string }
  | { readonly kind: "busy" }
  | { readonly kind: "closed" };

export interface PolicyWatchDeps {
  /** The controller's current policy version. */
  readonly current: () => string;
  readonly logger: Logger;
  readonly waitMs?: number;
  readonly max?: number;
  /** The real ones unless a test moves time by hand. */
  readonly timers?: Timers;
}

interface Waiter {
  readonly since: string;
  readonly timer: TimerId;
  readonly done: (changed: boolean, version: string) => void;
}

export class PolicyWatch {
  readonly #deps: PolicyWatchDeps;
  readonly #waiters = new Map<string, Waiter>();
  readonly #timers: Timers;
  #check: TimerId | undefined;
  #closed = false;
  /** The last version computed (what "no change" answers carry). */
  #last: string | undefined;

  constructor(deps: PolicyWatchDeps) {
    this.#deps = deps;
    this.#timers = deps.timers ?? realTimers;
  }

  /** Requests waiting now. */
  get size(): number {
    return this.#waiters.size;
  }

  /**
   * Waits until the policy version differs from `since` (at once when it already does), the wait
   * is over, `signal` aborts (the node went away) or the controller stops.
   */
  wait(nodeId: string, since: string, signal?: AbortSignal): Promise<WatchAnswer> {
    if (this.#closed) return Promise.resolve({ kind: "closed" });
    const version = this.#version();
    if (version !== since || signal?.aborted) {
      return Promise.resolve({
        kind: "answer",
        changed: version !== since,
        policy_version: version,
      });
    }
    // A node has one waiting request: a newer one means the older's connection is of no use.
    this.#waiters.get(nodeId)?.done(false, version);
    if (this.#waiters.size >= (this.#deps.max ?? MAX_WATCHERS)) {
      return Promise.resolve({ kind: "busy" });
    }
    return new Promise((resolve) => {
      const onAbort = () => waiter.done(false, this.#last ?? version);
      const waiter: Waiter = {
        since,
        timer: this.#timers.setTimeout(onAbort, this.#deps.waitMs ?? WATCH_WAIT_MS),
        done: (changed, v) => {
          if (this.#waiters.get(nodeId) === waiter) this.#waiters.delete(nodeId);
          this.#timers.clearTimeout(waiter.timer);
          signal?.removeEventListener("abort", onAbort);
          resolve({ kind: "answer", changed, policy_version: v });
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.set(nodeId, waiter);
    });
  }

  /** Told after every policy swap: answers the waiting nodes whose version is no longer current. */
  changed(): void {
    if (this.#closed || this.#waiters.size === 0 || this.#check !== undefined) return;
    this.#check = this.#timers.setTimeout(() => {
      this.#check = undefined;
      let version: string;
      try {
        version = this.#version();
      } catch (err) {
        // The waiting nodes still hear of it at their next heartbeat or watch.
        this.#deps.logger.warn("cannot compute the policy version for waiting nodes", {
          error: err as Error,
        });
        return;
      }
      for (const w of [...this.#waiters.values()]) if (w.since !== version) w.done(true, version);
    }, SETTLE_MS);
  }

  /** Answers every waiting request ("no change") and refuses to wait from now on. */
  close(): void {
    this.#closed = true;
    this.#timers.clearTimeout(this.#check);
    this.#check = undefined;
    for (const w of [...this.#waiters.values()]) w.done(false, this.#last ?? w.since);
  }

  #version(): string {
    this.#last = this.#deps.current();
    return this.#last;
  }
}
