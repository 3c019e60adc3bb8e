/**
 * One data-plane worker slot of the pool (`app/data_workers.ts`): its thread, started again with a
 * back-off when it crashes, and what the thread last acknowledged and reported.
 */
import type { Logger } from "../mod/core/logger.ts";
import type { ListenerConnections } from "../mod/core/connection_stats.ts";
import type { CacheStats, FromWorker, ToWorker, WorkerInit } from "./data_worker_protocol.ts";

/** The data-plane worker's module: what a slot's thread runs. */
export const WORKER_URL = new URL("./data_worker.ts", import.meta.url);
const START_TIMEOUT_MS = 120_000;
/** Back-off between attempts to start a crashed worker again: doubles from the first to the last. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 10_000;

/** What a slot asks of the pool it belongs to. */
export interface SlotHost {
  readonly logger: Logger;
  /** True once the pool shuts down: an ended thread is not started again. */
  readonly stopping: boolean;
  /** The process's counters of the data listener's connections (the workers' fronts add up). */
  readonly connections: ListenerConnections | undefined;
  /** The module a new thread runs. */
  workerModule(): URL | string;
  /** The start message of slot `index`. */
  init(index: number): WorkerInit;
  /** A message of the slot's thread; `started` settles the start under way. */
  receive(slot: WorkerSlot, m: FromWorker, started: (err?: Error) => void): void;
  /** The slot's thread ended: the questions it was asked are answered for it (0). */
  ended(slot: WorkerSlot): void;
  /** Releases the shared-memory locks slot `index` held; returns how many. */
  releaseLocks(index: number): number;
}

export class WorkerSlot {
  /** 1..N; also the owner id of the shared-memory locks its thread holds. */
  readonly index: number;
  /** The thread (replaced on restart); undefined until the first start. */
  worker: Worker | undefined;
  /** Policy version the worker enforces (0 until it listens). */
  version = 0;
  /** Serving: listening and not crashed. */
  live = false;
  cache: CacheStats | undefined;
  /** Its connection front's counters as last reported (added to the process's). */
  connections: ListenerConnections | undefined;
  /** Requests it finished (from the records it sent); tests and measurements read it. */
  requests = 0;
  restarts = 0;
  /** Failed attempts to start it again after a crash (each one logged). */
  restartFailures = 0;
  /** The timer of the next attempt while a restart failed (the slot serves nothing meanwhile). */
  #retry: ReturnType<typeof setTimeout> | undefined;
  #drained: (() => void) | undefined;
  readonly #host: SlotHost;

  constructor(host: SlotHost, index: number) {
    this.#host = host;
    this.index = index;
  }

  /** True while it waits to be started again: no thread, no cache, nothing to answer. */
  get retrying(): boolean {
    return this.#retry !== undefined;
  }

  post(message: ToWorker): void {
    this.worker?.postMessage(message);
  }

  /** Starts (or restarts) its thread; resolves when it listens. */
  start(): Promise<void> {
    const host = this.#host;
    const worker = new Worker(host.workerModule(), { type: "module", name: `data-${this.index}` });
    this.worker = worker;
    this.version = 0;
    this.cache = undefined;
    // A replaced worker's connections went with it; what it counted stays counted.
    if (this.connections && host.connections) host.connections.open -= this.connections.open;
    this.connections = undefined;
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(
        () => started(new Error(`data-plane worker ${this.index} did not start in time`)),
        START_TIMEOUT_MS,
      );
      function started(err?: Error) {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      }
      worker.onmessage = (e: MessageEvent<FromWorker>) => host.receive(this, e.data, started);
      worker.onerror = (e: ErrorEvent) => {
        e.preventDefault();
        if (!settled) {
          started(new Error(e.message));
          return;
        }
        this.crashed(e.message);
      };
      worker.postMessage({ t: "init", init: host.init(this.index) } satisfies ToWorker);
    });
  }

  /** Its thread ended (crashed, or terminated): logged and started again, unless shutting down. */
  crashed(reason: string): void {
    const host = this.#host;
    // Ended again while waiting to be started again: one restart, not two.
    clearTimeout(this.#retry);
    this.#retry = undefined;
    this.worker?.terminate();
    this.live = false;
    host.ended(this);
    // Shutting down: not restarted, and a drain waiting for it is done (its connections and
    // the records it held ended with it); it would otherwise wait for the shutdown deadline.
    if (host.stopping) return this.#drained?.();
    // Locks it held mid-update would stop the others: release them before anyone waits long.
    const released = host.releaseLocks(this.index);
    this.restarts++;
    host.logger.error("data-plane worker crashed; restarting it", {
      worker: this.index,
      reason,
      restarts: this.restarts,
      locks_released: released,
    });
    this.#restart(1);
  }

  /**
   * Starts a crashed worker's thread again; a start that fails is tried again after a back-off
   * (0.1 s doubling to 10 s) until one succeeds or the pool stops: a slot left dead after one
   * failed start ran the data plane on one core fewer (none, with every slot dead) for the life
   * of the process.
   */
  #restart(attempt: number): void {
    const host = this.#host;
    this.start().then(
      () => host.logger.info("data-plane worker restarted", { worker: this.index, attempt }),
      (err) => {
        this.worker?.terminate();
        // Asked while the attempt was under way (a flush, a purge): its thread ended without an
        // answer and holds no cache; waiting for it made the question wait out its timeout
        // and report the slot unanswered.
        host.ended(this);
        this.restartFailures++;
        if (host.stopping) return this.#drained?.();
        const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (attempt - 1));
        host.logger.error("data-plane worker failed to restart", {
          worker: this.index,
          attempt,
          retry_in_ms: delay,
          error: err,
        });
        this.#retry = setTimeout(() => {
          this.#retry = undefined;
          if (!host.stopping) this.#restart(attempt + 1);
        }, delay);
        Deno.unrefTimer(this.#retry);
      },
    );
  }

  /** Stops accepting and lets its requests finish; resolves once its thread says it drained. */
  drain(): Promise<void> {
    return new Promise<void>((resolve) => {
      // Waiting to be started again: no thread, nothing in flight, no records held.
      if (this.#retry !== undefined) {
        clearTimeout(this.#retry);
        return resolve();
      }
      this.#drained = resolve;
      this.post({ t: "drain" });
    });
  }

  /** Its thread answered the drain. */
  drained(): void {
    this.#drained?.();
  }

  /** Ends its thread now, and any start again it waits for. */
  terminate(): void {
    clearTimeout(this.#retry);
    this.worker?.terminate();
  }
}
