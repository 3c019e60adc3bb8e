/**
 * The discovered API inventory. The data plane hands sampled requests to {@link Inventory.sample}
 * (a bounded buffer, nothing else on the request path); a timer drains the buffer into endpoint
 * templates and writes what changed to the store in one batch, so the inventory survives
 * restarts without any store work per request. How paths cluster into templates, and the bounds
 * on memory, are `endpoint_table.ts`.
 *
 * The inventory is the deployment's: every controller of one store (the `production` profile)
 * samples its own data plane and adds to the same rows. A flush writes only what this controller
 * counted since its last successful write (hits, method and status counts added, first seen the
 * earlier, last seen and its example path the later, names unioned within their bounds), added
 * to the stored row inside the write transaction (the PostgreSQL store's takes the deployment's
 * write lock), and folds the stored rows of templates merged away here into their new template.
 * A failed write keeps those counts for the next flush, so nothing is lost or counted twice.
 *
 * Reads ({@link Inventory.endpoints}, what `GET /api/apisec/endpoints` and the assistant answer
 * from) are the deployment's: the in-memory view is the stored inventory as last read plus all
 * this controller counted since; a read {@link READ_REFRESH_MS} or more after the store was last
 * read first writes this controller's counts, then reads the stored inventory back (newest first,
 * within the bound). Reads within that age (a console paging or filtering) answer from the view:
 * the other controllers' counts are then at most that much older than their last writes. A store
 * that cannot be read leaves the view as it is (logged; the next read tries again). Those reads
 * run on the management plane; the data plane only pushes samples. With one controller the view
 * is what it counted, as before.
 */
import type { ApiSecEndpointsRepo } from "../../db/apisec_endpoints_repo.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { combineStats } from "./endpoint_stats.ts";
import { type Endpoint, EndpointTable, type Sample } from "./endpoint_table.ts";

export type { Endpoint, Sample };

const BUFFER_LIMIT = 10_000;
const FLUSH_EVERY_MS = 30_000;
const DRAIN_EVERY_MS = 2_000;
/** A read this long or longer after the store was last read reads it again. */
export const READ_REFRESH_MS = 5_000;
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
  /**
   * Adds what was counted since the last successful write to the store, in one transaction;
   * false when that failed (the counts are kept for the next flush).
   */
  flush(): boolean;
  /**
   * The deployment's endpoints: the view, read again from the store (after writing this
   * controller's counts) when last read {@link READ_REFRESH_MS} ago or longer.
   */
  endpoints(): readonly Endpoint[];
  /** Counters of what the bounds left out. */
  stats(): { endpoints: number; overflow: number; dropped: number; buffered: number };
  /**
   * Forgets every endpoint, in memory and in the store (other controllers' counts not yet
   * written are added afresh at their next flush).
   */
  clear(): void;
  /** Starts the drain and flush timer. */
  start(): void;
  /** Stops the timer and writes what is left. */
  stop(): void;
}

class ApiInventory implements Inventory {
  readonly #o: InventoryOptions;
  readonly #table: EndpointTable;
  readonly #max: number;
  #buffer: Sample[] = [];
  #dropped = 0;
  #lastFlush: number;
  #lastRead: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #eager: ReturnType<typeof setTimeout> | undefined;

  constructor(o: InventoryOptions) {
    this.#o = o;
    this.#max = o.maxEndpoints ?? 10_000;
    this.#lastFlush = o.clock.now();
    this.#lastRead = this.#lastFlush;
    this.#table = new EndpointTable(this.#max, o.repo.load(this.#max));
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

  flush(): boolean {
    this.drain();
    this.#lastFlush = this.#o.clock.now();
    const changes = this.#table.changes();
    if (changes === undefined) return true;
    try {
      this.#o.repo.write(changes.rows, changes.gone, combineStats);
      this.#table.written();
      return true;
    } catch (err) {
      this.#o.logger.error("API inventory not stored; it is retried at the next flush", {
        error: err as Error,
      });
      return false;
    }
  }

  endpoints(): readonly Endpoint[] {
    const now = this.#o.clock.now();
    if (now - this.#lastRead < READ_REFRESH_MS) {
      this.drain();
      return this.#table.values();
    }
    this.flush();
    try {
      this.#table.refresh(this.#o.repo.load(this.#max));
      this.#lastRead = now;
    } catch (err) {
      this.#o.logger.warn("API inventory answered from memory: the store could not be read", {
        error: err as Error,
      });
    }
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
