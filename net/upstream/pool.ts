/**
 * The upstream client's keep-alive pool: idle connections per upstream origin, newest first, at
 * most `maxIdle` each, closed after `idleTimeoutMs` by one sweeping timer (running only while a
 * connection is idle). An idle connection keeps a read pending, so an upstream that closes it
 * (or sends bytes nobody asked for) is noticed at once and the connection dropped.
 */
import type { TimerId, Timers } from "../timers.ts";
import type { Connection } from "./connection.ts";

export interface PoolOptions {
  /** Idle connections kept per upstream origin. */
  readonly maxIdle: number;
  /** Idle connections older than this are closed. */
  readonly idleTimeoutMs: number;
  readonly timers: Timers;
}

export class ConnectionPool {
  readonly #maxIdle: number;
  readonly #idleTimeoutMs: number;
  readonly #timers: Timers;
  readonly #pools = new Map<string, Connection[]>();
  #idleCount = 0;
  #sweeper: TimerId | undefined;
  #closed = false;
  /** The sweep as the timer calls it (made once). */
  readonly #sweep = () => this.#sweepIdle();

  constructor(options: PoolOptions) {
    this.#maxIdle = options.maxIdle;
    this.#idleTimeoutMs = options.idleTimeoutMs;
    this.#timers = options.timers;
  }

  /** The newest idle connection to `origin`, taken out of the pool; undefined when none. */
  take(origin: string): Connection | undefined {
    const c = this.#pools.get(origin)?.pop();
    if (c === undefined) return undefined;
    c.idle = false;
    this.#idleCount--;
    return c;
  }

  /** A connection whose exchange ended cleanly goes back to the pool (or is closed). */
  release(c: Connection, keepAlive: boolean): void {
    if (!keepAlive || this.#closed || c.closed || !c.bodyDone || c.start !== c.end) {
      c.close();
      return;
    }
    let idle = this.#pools.get(c.origin);
    if (idle === undefined) this.#pools.set(c.origin, idle = []);
    if (idle.length >= this.#maxIdle) this.#drop(idle[0]!);
    c.start = 0;
    c.end = 0;
    c.idle = true;
    c.reused = true;
    c.idleSince = this.#timers.now();
    idle.push(c);
    this.#idleCount++;
    this.#sweeper ??= this.#timers.setInterval(
      this.#sweep,
      Math.max(250, Math.min(this.#idleTimeoutMs / 4, 5_000)),
    );
    // Anything arriving on an idle connection (its end, or bytes nobody asked for) ends it.
    const read = c.readInto(c.buf);
    c.pending = read;
    // This reaction runs before the one of a `fill` that takes the read when the connection is
    // reused (reactions run in the order they were added), and `take` clears `idle` first.
    c.onIdleRead ??= () => {
      if (c.idle) this.#drop(c);
    };
    read.then(c.onIdleRead, c.onIdleRead);
  }

  /** Closes every idle connection; connections released later are closed too. */
  close(): void {
    this.#closed = true;
    this.#timers.clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    for (const idle of this.#pools.values()) for (const c of idle.splice(0)) c.close();
    this.#idleCount = 0;
  }

  #sweepIdle(): void {
    const now = this.#timers.now();
    for (const idle of this.#pools.values()) {
      // Oldest first: stop at the first one still fresh.
      while (idle.length > 0 && now - idle[0]!.idleSince >= this.#idleTimeoutMs) {
        this.#drop(idle.shift()!);
      }
    }
    if (this.#idleCount === 0) {
      this.#timers.clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }

  #drop(c: Connection): void {
    if (c.idle) {
      c.idle = false;
      this.#idleCount--;
      const idle = this.#pools.get(c.origin);
      const i = idle?.indexOf(c) ?? -1;
      if (i >= 0) idle!.splice(i, 1);
    }
    c.close();
  }
}
