/**
 * Questions the management plane asks every data-plane worker (record flushes, cache purges) and
 * the answers it waits for, each with a count (`app/data_workers.ts`).
 */
import type { ToWorker } from "./data_worker_protocol.ts";
import type { WorkerSlot } from "./data_worker_slot.ts";

/** How long a question to every worker waits for their answers by default. */
export const ASK_TIMEOUT_MS = 1000;

/** What the workers answered, and how many did not in time. */
export interface Answers {
  readonly answers: number[];
  readonly unanswered: number;
}

export class WorkerQuestions {
  /** Question id -> a worker answered (with a count, or 0). */
  readonly #open = new Map<number, (slot: WorkerSlot, value: number) => void>();
  #lastId = 0;
  /** How long a question waits for every answer. */
  timeoutMs = ASK_TIMEOUT_MS;

  /**
   * Sends `message(id)` to every worker, a starting one too: it may listen (and cache) before
   * its "listening" answer is read here, so a purge that skipped it left its entries. Resolves
   * with the answers given once every worker has answered, a starting one too (it reads every
   * message after its start message, with its real handler: a purge's answer that did not wait
   * for it said `complete` while it could still serve what the purge removed), or after the
   * timeout with the number that had not (busy). A worker ended meanwhile counts as answered
   * with 0: its cache ended with it, and its successor starts empty ({@link endFor}).
   */
  ask(slots: readonly WorkerSlot[], message: (id: number) => ToWorker): Promise<Answers> {
    // A slot waiting to be started again has no thread to answer (nor a cache: its successor
    // starts empty); waiting for it made every flush and purge wait out the timeout.
    const waiting = new Set(slots.filter((s) => !s.retrying));
    if (waiting.size === 0) return Promise.resolve({ answers: [], unanswered: 0 });
    const id = ++this.#lastId;
    const got: number[] = [];
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#open.delete(id);
        resolve({ answers: got, unanswered: waiting.size });
      };
      const timer = setTimeout(done, this.timeoutMs);
      this.#open.set(id, (slot, value) => {
        if (!waiting.delete(slot)) return;
        got.push(value);
        if (waiting.size === 0) done();
      });
      for (const s of slots) s.post(message(id));
      if (waiting.size === 0) done();
    });
  }

  /** `slot` answered question `id` with `value`. */
  answer(id: number, slot: WorkerSlot, value: number): void {
    this.#open.get(id)?.(slot, value);
  }

  /** `slot`'s thread ended: every question it was asked gets its answer (0) from it now. */
  endFor(slot: WorkerSlot): void {
    for (const answer of [...this.#open.values()]) answer(slot, 0);
  }
}
