/**
 * The access-log writer's unanswered requests, in the order they were posted: a writer thread's
 * reply settles them by id, a thread that fails rejects what it was given, and at a switch of
 * threads a sink's start waiting in the old thread is asked again of the new one.
 */

/** What a writer thread answers (`writer_thread.ts`). */
export type WriterReply =
  /** `pruned`: rows a write's `keep` deleted. */
  | { kind: "written"; id: number; written: unknown; pruned?: number }
  /** Deferred batches written together: a row count, or the error, per batch. */
  | { kind: "batches"; ids: number[]; results: Array<number | string>; pruned: number }
  | { kind: "failed"; id: number; error: string }
  /**
   * Writes a thread handed over unwritten: it was replaced because it fell behind, and the
   * thread that took over writes them (`handOver`).
   */
  | { kind: "handover"; ids: number[] }
  /** The thread has its store connection: from now on it answers at its normal pace. */
  | { kind: "opened" }
  | { kind: "closed" };

/** A reply that answers requests. */
export type Answer = Exclude<WriterReply, { kind: "closed" | "opened" | "handover" }>;

export interface PendingRequest {
  readonly resolve: (v: never) => void;
  readonly reject: (e: Error) => void;
  /** When it was posted (`performance.now()`). */
  readonly posted: number;
  readonly worker: Worker;
  /** A sink's start: asked again of the next thread at a switch (see `moveStarts`). */
  readonly start?: Record<string, unknown>;
  /** A write: posted again to the next thread when the one it went to hands it over. */
  readonly write?: Record<string, unknown>;
}

export class PendingRequests {
  /** Unanswered requests in the order they were posted (a `Map` keeps insertion order). */
  readonly #pending = new Map<number, PendingRequest>();
  #next = 0;

  get size(): number {
    return this.#pending.size;
  }

  /** The oldest unanswered request and its id, or undefined. */
  oldest(): [number, PendingRequest] | undefined {
    return this.#pending.entries().next().value;
  }

  /** Posts `message` to `worker` under a new id; settles with the thread's answer. */
  post<T>(worker: Worker, message: Record<string, unknown>, posted: number): Promise<T> {
    const id = ++this.#next;
    const start = message.kind === "start-cursor" ? message : undefined;
    const write = message.kind === "write" ? message : undefined;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, {
        resolve: resolve as (v: never) => void,
        reject,
        posted,
        worker,
        start,
        write,
      });
      worker.postMessage({ ...message, id });
    });
  }

  /** Settles what `m` answers; `answered` is told when each settled request was posted. */
  settle(m: Answer, answered: (posted: number) => void): void {
    const take = (id: number) => {
      const p = this.#pending.get(id);
      if (p !== undefined) answered(p.posted);
      this.#pending.delete(id);
      return p;
    };
    if (m.kind === "batches") {
      m.ids.forEach((id, i) => {
        const p = take(id);
        const r = m.results[i];
        if (typeof r === "number") p?.resolve(r as never);
        else p?.reject(new Error(`Access-log batch failed: ${r}`));
      });
      return;
    }
    const p = take(m.id);
    if (m.kind === "written") p?.resolve(m.written as never);
    else p?.reject(new Error(`Access-log batch failed: ${m.error}`));
  }

  /**
   * Posts to `to` the writes (by id) a replaced thread handed over unwritten, under the same ids
   * (their place in the order of requests, and when they were posted, stay). Returns how many.
   */
  handOver(ids: readonly number[], to: Worker): number {
    let moved = 0;
    for (const id of ids) {
      const p = this.#pending.get(id);
      if (p?.write === undefined) continue;
      this.#pending.set(id, { ...p, worker: to });
      to.postMessage({ ...p.write, id });
      moved++;
    }
    return moved;
  }

  /** Rejects every request given to `worker` with `error`; returns how many. */
  rejectOf(worker: Worker, error: string): number {
    let rejected = 0;
    for (const [id, p] of this.#pending) {
      if (p.worker !== worker) continue;
      this.#pending.delete(id);
      p.reject(new Error(`Access-log writer thread failed: ${error}`));
      rejected++;
    }
    return rejected;
  }

  /**
   * Asks `to` again every sink's start still waiting in `from`, ahead of every later request;
   * `from`'s answer to it is then ignored (its id is gone). Answered by the old thread after the
   * new one committed later batches, the newest id it read was past them, and the sink never
   * shipped them. Rows the old thread still commits get higher ids, so they are after the new
   * thread's answer (shipped, though asked before the start).
   */
  moveStarts(from: Worker | undefined, to: Worker): void {
    for (const [id, p] of [...this.#pending]) {
      if (p.worker !== from || p.start === undefined) continue;
      this.#pending.delete(id);
      const again = ++this.#next;
      this.#pending.set(again, { ...p, worker: to });
      to.postMessage({ ...p.start, id: again });
    }
  }
}
