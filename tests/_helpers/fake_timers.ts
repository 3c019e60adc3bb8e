/**
 * Timers that run only when a test moves the clock (Deno std's `FakeTime`, as a parameter): the
 * transport takes them instead of the real ones (`net/timers.ts`), so a deadline test ticks past
 * the deadline instead of sleeping through it.
 */
import type { TimerId, Timers } from "../../net/timers.ts";

interface Pending {
  readonly id: TimerId;
  at: number;
  readonly fn: () => void;
  /** The period of an interval; 0 for a timeout. */
  readonly every: number;
}

export class FakeTimers implements Timers {
  #now: number;
  #next = 1;
  readonly #pending = new Map<TimerId, Pending>();

  constructor(start = 1_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerId {
    return this.#add(fn, ms, 0);
  }

  setInterval(fn: () => void, ms: number): TimerId {
    return this.#add(fn, ms, Math.max(1, ms));
  }

  clearTimeout(id: TimerId | undefined): void {
    if (id !== undefined) this.#pending.delete(id);
  }

  clearInterval(id: TimerId | undefined): void {
    if (id !== undefined) this.#pending.delete(id);
  }

  unref(_id: TimerId): void {}

  /** How many timers are pending. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * Moves the clock `ms` forward, running each timer that falls due at its time, in order; after
   * each, pending promise reactions and I/O callbacks get a turn of the event loop, as they would
   * between real timers.
   */
  async tick(ms: number): Promise<void> {
    const until = this.#now + ms;
    for (;;) {
      let due: Pending | undefined;
      for (const p of this.#pending.values()) {
        if (p.at <= until && (due === undefined || p.at < due.at)) due = p;
      }
      if (due === undefined) break;
      this.#now = Math.max(this.#now, due.at);
      if (due.every > 0) due.at += due.every;
      else this.#pending.delete(due.id);
      due.fn();
      await turn();
    }
    this.#now = until;
    await turn();
  }

  #add(fn: () => void, ms: number, every: number): TimerId {
    const id = this.#next++;
    this.#pending.set(id, { id, at: this.#now + Math.max(0, ms), fn, every });
    return id;
  }
}

/** One turn of the real event loop (promise reactions and finished I/O run). */
export function turn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * `promise`'s outcome, or a failure when it does not settle within `ms` of real time: a guard
 * that turns a deadline that never fires into a failed test instead of a hung one.
 */
export async function settlesWithin<T>(promise: Promise<T>, ms = 5_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `promise` is still pending after a few turns of the event loop. */
export async function stillPending(promise: Promise<unknown>, turns = 5): Promise<boolean> {
  let settled = false;
  const mark = () => {
    settled = true;
  };
  promise.then(mark, mark);
  for (let i = 0; i < turns && !settled; i++) await turn();
  return !settled;
}
