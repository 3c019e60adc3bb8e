/**
 * The discovered API inventory. The data plane hands sampled requests to {@link Inventory.sample}
 * (a bounded buffer, nothing else on the request path); a timer drains the buffer into endpoint
 * templates and writes changed endpoints to the store in one batch, so the inventory survives
 * restarts without any SQLite work per request. How paths cluster into templates, and the bounds
 * on memory, are `endpoint_table.ts`.
 */
import type { ApiSecEndpointsRepo } from "../../db/apisec_endpoints_repo.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { type Endpoint, EndpointTable, type Sample } from "./endpoint_table.ts";

export type { Endpoint, Sample };

const BUFFER_LIMIT = 10_000;
const FLUSH_EVERY_MS = 30_000;
const DRAIN_EVERY_MS = 2_000;
/**
 * Buffered samples that bring the drain forward (to the next macrotask, still off the request
 * path): samples then die young instead of surviving into the old generation under heavy traffic.
 */
const EAGER_DRAIN = 512;

export interface InventoryOptions {
  readonly repo: ApiSecEndpointsRepo;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly maxEndpoints?: number;
}

/** The discovered API inventory (what `createInventory` returns). */
export interface Inventory {
  /** Called by the data plane per sampled request: a bounded push, nothing more. */
  sample(s: Sample): void;
  /** Clusters the buffered samples into the endpoints. */
  drain(): void;
  /** Writes the changed endpoints in one transaction. */
  flush(): void;
  /** Every endpoint (after draining the buffer). */
  endpoints(): readonly Endpoint[];
  /** Counters of what the bounds left out. */
  stats(): { endpoints: number; overflow: number; dropped: number; buffered: number };
  /** Forgets every endpoint, in memory and in the store. */
  clear(): void;
  /** Starts the drain and flush timer. */
  start(): void;
  /** Stops the timer and writes what is left. */
  stop(): void;
}

class ApiInventory implements Inventory {
  readonly #o: InventoryOptions;
  readonly #table: EndpointTable;
  #buffer: Sample[] = [];
  #dropped = 0;
  #lastFlush: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #eager: ReturnType<typeof setTimeout> | undefined;

  constructor(o: InventoryOptions) {
    this.#o = o;
    const maxEndpoints = o.maxEndpoints ?? 10_000;
    this.#lastFlush = o.clock.now();
    this.#table = new EndpointTable(maxEndpoints, o.repo.load(maxEndpoints));
  }

  sample(s: Sample): void {
    if (this.#buffer.length >= BUFFER_LIMIT) {
      this.#dropped++;
      return;
    }
    this.#buffer.push(s);
    if (
      this.#buffer.length >= EAGER_DRAIN && this.#timer !== undefined && this.#eager === undefined
    ) {
      this.#eager = setTimeout(() => {
        this.#eager = undefined;
        this.drain();
      }, 0);
    }
  }

  drain(): void {
    const batch = this.#buffer;
    this.#buffer = [];
    for (const s of batch) this.#table.add(s);
  }

  flush(): void {
    this.drain();
    this.#lastFlush = this.#o.clock.now();
    const changes = this.#table.changes();
    if (changes === undefined) return;
    try {
      this.#o.repo.write(changes.rows, changes.gone);
      this.#table.written();
    } catch (err) {
      this.#o.logger.error("API inventory not stored; it is retried at the next flush", {
        error: err as Error,
      });
    }
  }

  endpoints(): readonly Endpoint[] {
    this.drain();
    return this.#table.values();
  }

  stats(): { endpoints: number; overflow: number; dropped: number; buffered: number } {
    return {
      endpoints: this.#table.size,
      overflow: this.#table.overflow,
      dropped: this.#dropped,
      buffered: this.#buffer.length,
    };
  }

  clear(): void {
    this.#buffer = [];
    this.#table.clear();
    this.#o.repo.clear();
  }

  start(): void {
    this.#timer ??= setInterval(() => {
      this.drain();
      if (this.#o.clock.now() - this.#lastFlush >= FLUSH_EVERY_MS) this.flush();
    }, DRAIN_EVERY_MS);
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#eager !== undefined) clearTimeout(this.#eager);
    this.#eager = undefined;
    this.flush();
  }
}

/** The inventory, loaded with the most recent `maxEndpoints` endpoints of the store. */
export function createInventory(o: InventoryOptions): Inventory {
  return new ApiInventory(o);
}
